// Package sandboxeino gives the sandbox tools (package
// github.com/dockersandbox/sandbox/tools: ls, read_file, write_file,
// edit_file, glob, grep, execute, delete) to CloudWeGo Eino
// (github.com/cloudwego/eino) agents.
//
// [Tools] returns them as [tool.InvokableTool] values, for
// compose.NewToolNode, react.NewAgent, an ADK ChatModelAgent or a chat
// model's WithTools (through each tool's Info):
//
//	ts := sandboxeino.Tools(sb, tools.Options{})
//	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: ts})
//
// Each tool's Info carries the tool's own JSON Schema as
// schema.NewParamsOneOfByJSONSchema, and InvokableRun takes the model's
// JSON arguments as they come.
//
// Failures are results, not errors: bad arguments, a missing file or any
// other failure the tool reports (tools.Result.IsError) come back as the
// returned string with a nil error, so that the model reads the message
// and can correct itself; an error from InvokableRun would abort the whole
// ToolsNode (and the agent's run) instead. A failing command is not a
// failure either: its output ends with "[Command failed with exit code N]".
//
// Media: the tools of [Tools] return text only, so read_file of an image,
// audio, video or PDF file says what the file is and that its content is
// not shown. [MultimodalTools] returns the same tools as
// [tool.EnhancedInvokableTool] values instead, whose [schema.ToolResult]
// carries the file as a base64 image, audio, video or file part beside
// the text; the ToolsNode puts the parts in the tool message's
// UserInputMultiContent (and leaves Content empty), so use them with a chat
// model that reads multimodal tool messages.
//
// # A backend for Eino's filesystem middleware and deep agent
//
// [NewBackend] returns the sandbox as Eino's (v0.7.36) filesystem.Backend,
// ShellBackend and StreamingShellBackend, for the filesystem middleware
// (adk/middlewares/filesystem), whose tools, prompts and large-result
// offloading then run on the sandbox unchanged, and for the agents that
// take it, such as the prebuilt deep agent (adk/prebuilt/deep):
//
//	files, err := filesystem.NewMiddleware(ctx, &filesystem.Config{Backend: sandboxeino.NewBackend(sb)})
//	agent, err := deep.New(ctx, &deep.Config{Name: "coder", Description: "codes",
//		ChatModel: cm, Middlewares: []adk.AgentMiddleware{files}})
//
// As in Eino, a backend error is the tool's error, which ends the agent's
// run (a missing file to read, a file to write that exists).
//
// Eino v0.7.36's requests have no grep options beyond pattern, path and
// glob (no case-insensitive, file type, context lines or multiline), no
// multimodal read and no background flag for Execute; so neither has the
// Backend. [Backend.ExecuteBackground], for programs that call the
// backend themselves, starts a command without waiting, its output in a
// file in the sandbox.
//
// Where the Backend differs from Eino's InMemoryBackend (each difference is
// a row of TestCompareInMemory):
//   - Paths: a relative path is relative to the sandbox's working
//     directory, not to "/". GrepRaw's default path is the working
//     directory (as GrepRequest documents), not "/".
//   - Lines: a final line end does not start another, empty line
//     ("a\n" is one line; InMemoryBackend reads it as two, the second
//     empty); "\r\n" ends a line without leaving a "\r" in Read and
//     GrepRaw, and a lone "\r" ends one in Read. An empty file reads as "System reminder: File exists
//     but has empty contents", as the read_file tool's description says. A
//     binary or media file reads as a sentence saying what it is. A page
//     is at most 512000 bytes (a longer one is cut, with a note); a grep
//     match's content at most 64 KiB.
//   - Missing paths: LsInfo and GrepRaw of a missing path are errors
//     (InMemoryBackend, which has no directories, returns nothing).
//   - GlobInfo: deepagents' rules, not filepath.Match on base names: a
//     pattern with "/" matches the path relative to the request's path,
//     "**" spans directories, an absolute pattern matches absolute paths,
//     {a,b} braces expand, "*" does not match a leading "." (".x.go" needs
//     ".*.go"), an unclosed "[" matches itself rather than failing.
//     Directories are not matched. At most 10000 matches in 5 s;
//     /proc, /sys and /dev are not searched from "/".
//   - GrepRaw: its Glob filter takes a pattern with "/" (relative path),
//     "**" and braces too; an empty pattern is an error (InMemoryBackend
//     matches every line); binary files are skipped; the search stops
//     after 5 s, returning what it found.
//   - Write: refuses an existing file as InMemoryBackend does, but the
//     check and the write are two calls: a file another writer creates
//     between them is replaced. Parent directories are created.
//   - Edit: a file with CRLF line ends matches LF text, and keeps its
//     CRLFs. As in InMemoryBackend, a NewString equal to OldString is
//     accepted (the file is unchanged).
//   - Results are sorted by path (InMemoryBackend's are in map order).
//
// Execute and ExecuteStreaming run sh -c in the working directory with
// the sandbox's timeout and output cap, and kill the command's process tree
// when their context ends; see [Backend.ExecuteStreaming] for the stream.
package sandboxeino
