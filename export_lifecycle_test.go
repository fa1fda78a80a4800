package sandbox

import "time"

// SetAfterCreate makes New call f with the container's ID right after
// ContainerCreate (a child test process crashes itself there). Only for a
// process that creates no other sandbox concurrently.
func SetAfterCreate(f func(id string)) { afterCreate = f }

// SetCloseBound sets the bound of s's Close (default 30 s), so that a
// test can end it while the daemon is removing the container.
func SetCloseBound(s *DockerSandbox, d time.Duration) { s.removeFor = d }

// AbandonedAfter is how old a never-started sandbox must be for Prune's
// and New's sweep to take it as abandoned whatever its owner.
const AbandonedAfter = abandonedAfter
