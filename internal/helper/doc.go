// Package helper is the program injected into every sandbox container
// (command sandbox-helper, built by go generate in internal/helperbin): it
// is the container's PID 1, and it serves the library's requests, shell
// commands and file operations on the container's filesystem as the
// sandbox user sees it, over the protocol of package proto.
//
// # Modes
//
// One binary, one mode per first argument (command sandbox-helper's
// main):
//
//   - init: PID 1 (Init, init.go). It catches the engine's stop signal and
//     writes proto.ReadyLine, collects the container's zombies
//     (reapZombies, init_zombies.go), ends the container after its lifetime
//     or idle timeout (lifetime.go; InitOptions), and owns the table of
//     managed processes (pid1_*.go), which it serves on a unix socket.
//   - boot: PID 1's first program where the library shares the helper
//     with the container (Boot, boot.go): it installs the helper at its
//     path and executes it as init.
//   - serve and call: a serving helper (Serve, serve.go), which the library
//     starts with an exec, or PID 1 on its first channel's connection
//     (first_channel.go). "serve" is the shared channel: it answers
//     requests until its input ends. "call" answers one request and exits.
//   - serve-direct: the shared copy, run by an exec, connecting to the
//     library's socket and executing serve on that connection
//     (ServeDirect, serve_direct.go).
//   - reap: a reaper (RunReaper, reaper_main.go), which a serving helper
//     puts under each command it runs (runReaped, reaper_client.go): a
//     child subreaper leading the command's process group, so that every
//     process the command starts stays a descendant that a timeout or a
//     cancel kills (killTree), and the shell's status comes back.
//   - procexec: a launcher (RunLauncher, pid1_launcher.go), which PID 1
//     keeps started ahead and which becomes a managed process's command.
//   - install, untar, tar: the file modes (Install, Untar, Tar; archive.go):
//     the helper copying itself into a volume (an init container), and
//     archives into and out of the container.
//   - version: prints proto.Version.
//
// # The request flow
//
// Serve writes the Hello (its version, session and capabilities, see
// proto.Capability) and reads frames. server.dispatch takes each request
// frame: decodeRequest and validateRequest (request.go) make the checks
// common to every request, then the operation's own (its row of ops, the
// dispatch table in ops.go, whose other half is proto.Ops: input, output,
// retries, result bound, capability). The request runs in its goroutine,
// with its input piped in when proto.Request.TakesInput, through
// handleRequest and its row's handle:
//
//   - exec: runExec (exec.go, exec_tty.go on a terminal), the command
//     under a reaper of its own; output goes as it comes.
//   - the file operations (ops.go, files.go, package fsops), cat's output
//     held back to leave with the Result (heldoutput.go).
//   - kill (kill.go): the commands of another helper's session.
//   - dial and watch: streams (stream.go, dial.go, watch.go), with credit
//     in each direction, until their Result.
//   - the process operations: forwardProc (serve_procs.go) hands them to
//     PID 1, whose procTable.handle (pid1_table.go) runs the row's table
//     function: a start takes a launcher, the output goes into the
//     process's log (pid1_log.go), and PID 1 collects the exit.
//
// The Result is fitted to what the library accepts (fitResult) and
// written last. Every request announces itself to PID 1 (announce: it is
// activity, for the idle timeout), and a cancel frame or the end of the
// input cancels it, killing its commands.
//
// # Transports and their fallbacks
//
// The library reaches a serving helper one of two ways: the shared channel
// (one "serve" helper, requests multiplexed by ID: on PID 1's first
// channel, on a connection to the library's socket that serve-direct
// made, or on an exec's stream, the first that can be had), or an exec of
// its own per request ("call"): for a Cmd with the caller's own input or writers, a
// command as another user or on a terminal, and whenever the channel is
// off (WithSharedChannel(false)) or cannot be had. A read-only
// request (proto.OpSpec.RetrySafe) that a breaking channel lost is run
// again on an exec of its own.
//
// A dial's bytes go over the library's port socket when the sandbox has
// one (a unix socket the library shares with it; dial_direct.go): the
// helper connects, introduces the connection with the request's token,
// and waits for the library's acknowledgement. Anything else (no socket,
// no answer, a refusal) and the bytes go as a stream of data frames on
// the channel.
//
// A serving helper sends its process requests to PID 1 over one
// multiplexed connection to PID 1's socket (pid1_mux.go says what crosses
// it; the client is in serve_procs.go). A request that finds it broken,
// or finds muxBusy requests in flight on it, takes a connection of its
// own (pid1_server.go's serveConn answers it).
//
// # Compatibility
//
// The library refuses, at its hello, a helper of another proto.Version,
// and, before sending it, a request needing a capability that the helper
// did not announce (see internal/proto/caps.go): so a helper never sees an
// operation it does not have.
package helper
