// Package tools is a framework-neutral set of agent tools over a sandbox:
// ls, read_file, write_file, edit_file, glob, grep, execute and delete,
// with the names, arguments, defaults and model-facing texts of deepagents
// 0.7's FilesystemMiddleware. Each Tool has a name, a description written
// for a model and a hand-written JSON Schema of its arguments; Call takes
// the raw JSON arguments of a tool call and returns the text the model
// sees (and, for read_file of a media file, the file as base64 Media).
//
//	set := tools.New(sb, tools.Options{})
//	t, _ := tools.Lookup(set, "read_file")
//	res := t.Call(ctx, json.RawMessage(`{"file_path": "main.py"}`))
//
// Paths from the model are validated as deepagents validates them: a ".."
// component or a leading "~" is "Error: Path traversal not allowed: p", a
// Windows drive path is refused too, and backslashes count as "/". An
// absolute path is then used as is (cleaned). A relative or bare path
// resolves against the sandbox's working directory (normally /workspace),
// where execute runs its commands: "main.py" is /workspace/main.py, not
// /main.py as in deepagents, whose virtual-root convention made the file
// tools and the shell disagree about the same name. Without a path, grep
// searches the working directory, and glob searches it too unless the
// pattern starts with "/" (then it is absolute and searched from "/").
//
// File names are bytes; the model sees text. A name that is not valid
// UTF-8, or holds a control character or a backslash, is shown as its
// Python repr (ls and glob show every name so): 'x\udcff' for the byte
// 0xff, as Python's surrogateescape decodes it. In a path argument the JSON
// escapes \udc80 to \udcff stand for the bytes 0x80 to 0xff, so a name
// copied from a listing reaches the same file; another lone surrogate is an
// invalid argument, never U+FFFD (which would name another file). Names
// met in command output or file content are text: there a byte that is not
// UTF-8 shows as U+FFFD, and a U+FFFD passed back names the file that
// holds U+FFFD.
//
// Arguments are decoded strictly: unknown fields, wrong JSON types and
// missing required fields come back as "Error: invalid arguments for
// <tool>: ..." (an integral number such as 5.0 is an integer; null means
// "not given" for an optional argument). Call never panics.
//
// Uploads and downloads stay developer-only: they are methods of the
// sandbox, not tools. Tools may be called concurrently.
//
// NewExec is an opt-in second set in the shape of OpenAI Codex's unified
// exec tools, for long-running and interactive commands: exec_command,
// write_stdin, list_sessions and kill_session, over the sandbox's
// processes (Sandbox.StartProcess). Their answers are Codex's text
// ("Process running with session ID 1000", "Process exited with code 0",
// "Original token count: N", head and tail around "…N tokens truncated…").
package tools
