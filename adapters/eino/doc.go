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
package sandboxeino
