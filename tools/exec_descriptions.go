package tools

// The descriptions and JSON Schemas of the session tools. exec_command and
// write_stdin keep the names, parameters and wording of Codex's unified
// exec tools (codex-rs/tools/src/local_tool.rs), with the sandbox's facts
// added; list_sessions and kill_session are this package's own.

const execCommandDescription = `Runs a command in a PTY, returning output or a session ID for ongoing interaction.

Usage:
- The command runs with sh -c (or the given shell) in the working directory {wd}, or in workdir (absolute, or relative to {wd}).
- It waits up to yield_time_ms (default 10000, between 250 and 30000) for the command to finish. If it finishes, the result says "Process exited with code N"; if it is still running (a dev server, a watcher, a REPL), the result says "Process running with session ID N": the process keeps running, and write_stdin with that session ID sends it input or, with empty chars, collects its new output.
- tty=true runs the command on a pseudo-terminal, with stdin open for write_stdin (use it for REPLs and programs that want a terminal); without a tty, stdin is closed (reads get end of file) and output is not line-buffered by the terminal.
- Output beyond max_output_tokens (default 10000; a token is about 4 bytes) keeps its beginning and end around a "…N tokens truncated…" marker.
- list_sessions lists the sessions still running; kill_session ends one with every process it started.`

const execCommandSchema = `{
  "type": "object",
  "properties": {
    "cmd": {"type": "string", "description": "Shell command to execute."},
    "workdir": {"type": "string", "description": "Optional working directory to run the command in; defaults to {wd}."},
    "shell": {"type": "string", "description": "Shell binary to launch. Defaults to sh."},
    "tty": {"type": "boolean", "description": "Whether to allocate a TTY for the command. Defaults to false (plain pipes); set to true to open a PTY and access TTY process."},
    "yield_time_ms": {"type": "integer", "minimum": 0, "description": "How long to wait (in milliseconds) for output before yielding."},
    "max_output_tokens": {"type": "integer", "minimum": 0, "description": "Maximum number of tokens to return. Excess output will be truncated."}
  },
  "required": ["cmd"],
  "additionalProperties": false
}`

const writeStdinDescription = `Writes characters to an existing unified exec session and returns recent output.

Usage:
- session_id is the number from "Process running with session ID N" of exec_command.
- chars are written as they are: end a line with "\n" to submit it. "\u0003" alone is Ctrl-C: on a session without a tty it interrupts the command's process group (exit code 130 unless it traps SIGINT). Other input needs a session started with tty=true.
- With empty chars the call only polls: it waits up to yield_time_ms (at least 5000, at most {max_poll} ms) for the process to finish, and returns the output that came since the last call. With chars it waits yield_time_ms (default 250, between 250 and 30000).
- Once the result says "Process exited with code N", the session is gone.`

const writeStdinSchema = `{
  "type": "object",
  "properties": {
    "session_id": {"type": "integer", "description": "Identifier of the running unified exec session."},
    "chars": {"type": "string", "description": "Bytes to write to stdin (may be empty to poll)."},
    "yield_time_ms": {"type": "integer", "minimum": 0, "description": "How long to wait (in milliseconds) for output before yielding."},
    "max_output_tokens": {"type": "integer", "minimum": 0, "description": "Maximum number of tokens to return. Excess output will be truncated."}
  },
  "required": ["session_id"],
  "additionalProperties": false
}`

const listSessionsDescription = `Lists the exec_command sessions that are still running, or have exited with output not yet collected: one line per session with its session ID, state, age and command.`

const listSessionsSchema = `{
  "type": "object",
  "properties": {},
  "additionalProperties": false
}`

const killSessionDescription = `Kills an exec_command session: the process and every process it started. Returns the output not yet collected and the exit code, as write_stdin does; the session is gone afterwards.`

const killSessionSchema = `{
  "type": "object",
  "properties": {
    "session_id": {"type": "integer", "description": "Identifier of the session to kill."}
  },
  "required": ["session_id"],
  "additionalProperties": false
}`
