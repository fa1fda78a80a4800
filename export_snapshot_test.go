package sandbox

import "time"

// SetAfterSnapshotCommit makes Snapshot call f with the image of its first
// commit, when it has volumes to add (a child test process crashes
// itself there).
func SetAfterSnapshotCommit(f func(id string)) { afterSnapshotCommit = f }

// SetSnapshotBound sets the bound of Snapshot without a deadline and
// returns a function that restores it.
func SetSnapshotBound(d time.Duration) (restore func()) {
	old := snapshotBound.Swap(int64(d))
	return func() { snapshotBound.Store(old) }
}
