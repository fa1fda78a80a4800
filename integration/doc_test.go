// Package integration holds the black-box tests of package sandbox (the
// repository's root) against a real engine: Docker by default, Podman, or
// any engine.Engine through DOCKERSANDBOX_TEST_ENGINE (see TESTING.md).
// They use the public API, internal/testenv and internal/sandboxtest, and
// reach into package sandbox only through internal/testhook.
//
// The files are named by subject: lifecycle_* (New, Close, options, pause,
// stop, lifetime, Attach, List and Prune), exec_* (Execute, Cmd, the
// helper's channel), process_* (StartProcess), files_* (the file calls, FS,
// transfer, Watch), ports_* (Dial, the port socket), snapshot_* (Snapshot,
// Persist and Hydrate), pool_*, engine_*, usage_test.go (Usage,
// WatchUsage), hostile_* (a sandbox, helper or output that attacks the
// host), faults_* (the daemon or host failing), bench_* and soak_test.go;
// helpers_* and main_test.go hold the shared helpers.
package integration
