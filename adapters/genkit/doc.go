// Package sandboxgenkit gives the sandbox tools (package
// github.com/dockersandbox/sandbox/tools: ls, read_file, write_file,
// edit_file, glob, grep, execute, delete) to Genkit for Go
// (github.com/firebase/genkit/go).
//
// [DefineTools] registers them on a *genkit.Genkit, to name in any
// Generate call or prompt; [NewTools] makes unregistered (dynamic) ones,
// for a sandbox per request:
//
//	g := genkit.Init(ctx, genkit.WithPlugins(...))
//	ts := sandboxgenkit.DefineTools(g, sb, tools.Options{})
//	resp, err := genkit.Generate(ctx, g, ai.WithPrompt("..."), ai.WithTools(sandboxgenkit.Refs(ts)...))
//
// Each tool has the tool's own JSON Schema as its input schema. It is a
// multipart tool: its output is the text the model reads (a string), and
// read_file of an image, audio, video or PDF file adds the file as a media
// part (a base64 data: URL) to the tool response's content.
//
// Failures the tool reports (tools.Result.IsError: a missing file, a path
// outside the rules, a failing edit) are the output text, with no error,
// so that the model reads the message and can correct itself; an error
// from a tool would end Generate instead. A failing command is not a
// failure either: its output ends with "[Command failed with exit code N]".
// Arguments that do not match the schema (an unknown field, a wrong type)
// are refused by Genkit itself, which validates every tool input against
// the tool's schema before the tool runs: that is an INVALID_ARGUMENT
// error, and it ends Generate as it does for any Genkit tool.
//
// Genkit registers one tool per name: call DefineTools once per
// *genkit.Genkit, and use NewTools for more sandboxes.
package sandboxgenkit
