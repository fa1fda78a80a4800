package sandbox

// SetAfterSnapshotCommit makes Snapshot call f with the image of its first
// commit, when it has volumes to add (a child test process crashes
// itself there).
func SetAfterSnapshotCommit(f func(id string)) { afterSnapshotCommit = f }
