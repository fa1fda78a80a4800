// Package sandboxlangchaingo gives the sandbox tools (package
// github.com/dockersandbox/sandbox/tools: ls, read_file, write_file,
// edit_file, glob, grep, execute, delete) to LangChainGo
// (github.com/tmc/langchaingo).
//
// [Tools] returns them as langchaingo tools (tools.Tool: Name,
// Description, Call(ctx, input string)), for agents.NewExecutor with
// agents.NewOneShotAgent, agents.NewConversationalAgent or
// agents.NewOpenAIFunctionsAgent:
//
//	ts := sandboxlangchaingo.Tools(sb, tools.Options{})
//	executor := agents.NewExecutor(agents.NewOneShotAgent(llm, ts))
//
// A langchaingo tool takes one string. Call takes the arguments as a JSON
// object ({"command": "ls -la"}), as a chat model writes them; and, for a
// tool with one required string argument (ls, read_file, glob, grep,
// execute, delete), that argument alone, as plain text (ls -la) or as a
// JSON string ("ls -la"), as a ReAct agent's "Action Input:" tends to be.
// Since langchaingo's agents show a model only the tools' names and
// descriptions, Description ends with the JSON Schema of the arguments and
// says when plain text will do.
//
// With a chat model's native tool calling, [Definitions] gives the tools'
// function definitions (the JSON Schemas as parameters) for
// llms.WithTools, and [CallTool] runs a tool call of the model's answer
// and returns the llms.ToolCallResponse to send back.
//
// Failures the tool reports (tools.Result.IsError: bad arguments, a
// missing file, a path outside the rules) are the returned text with a
// nil error, so that the model reads the message and can correct itself;
// an error from Call would end the executor's run instead. A failing
// command is not a failure either: its output ends with "[Command failed
// with exit code N]".
//
// Results are text only: read_file of an image, audio, video or PDF file
// says what the file is and that its content is not shown.
package sandboxlangchaingo
