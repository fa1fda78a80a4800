package tools

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// The tools' descriptions and JSON Schemas, adapted from deepagents 0.7's.
// {wd}, {max_timeout} and {grep_max} are filled in by New.

// fill puts the tool set's values into a description.
func (e *env) fill(s string) string {
	return strings.NewReplacer(
		"{wd}", e.wd,
		"{max_timeout}", pySeconds(e.opts.MaxExecuteTimeout),
		"{grep_max}", strconv.Itoa(e.opts.GrepMaxCount),
	).Replace(s)
}

// schema fills a schema template (escaping the values for JSON strings)
// and compacts it.
func (e *env) schema(tmpl string) json.RawMessage {
	esc := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b[1 : len(b)-1])
	}
	filled := strings.NewReplacer(
		"{wd}", esc(e.wd),
		"{max_timeout}", pySeconds(e.opts.MaxExecuteTimeout),
		"{grep_max}", strconv.Itoa(e.opts.GrepMaxCount),
	).Replace(tmpl)
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(filled)); err != nil {
		panic("tools: invalid schema template: " + err.Error())
	}
	return buf.Bytes()
}

const lsDescription = `Lists all files in a directory.

This is useful for exploring the filesystem and finding the right file to read or edit.
You should almost ALWAYS use this tool before using the read_file or edit_file tools.

The path is absolute, or relative to the working directory {wd}. The result is the list of the absolute paths of the directory's entries (one level deep).`

const lsSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Path of the directory to list: absolute, or relative to {wd}."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

const readDescription = `Reads a file from the filesystem. Assume any path the user provides is valid; reading a missing file returns an error.

Usage:
- The path is absolute, or relative to the working directory {wd} (so main.py is {wd}/main.py).
- By default, it reads up to 100 lines starting from the beginning of the file. Use ` + "`offset`/`limit`" + ` to page through large files instead of reading them whole.
- Results are returned with line numbers starting at ` + "`offset`" + ` + 1 (1 by default), then two spaces, then the source line. Never include these line-number prefixes when editing.
- Lines over 5,000 characters are split with continuation markers (e.g. 5.1, 5.2); ` + "`limit`" + ` counts source lines, so continuation rows do not consume the budget.
- When lines remain after the page, a note at the end says how many and which offset to continue from.
- Speculatively batch multiple read_file calls in one response when several files may be useful.
- An empty file returns a system-reminder warning in place of contents.
- Images (.png, .jpg, etc.), audio, video, PDFs and other binary files are returned whole as base64 media (up to 512000 bytes); pagination via ` + "`offset`/`limit`" + ` is text-only - supply file_path only.
- Always read a file before editing it.`

const readSchema = `{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "Path of the file to read: absolute, or relative to {wd}."},
    "offset": {"type": "integer", "default": 0, "description": "Line number to start reading from (0-indexed). Use for pagination of large files."},
    "limit": {"type": "integer", "default": 100, "description": "Maximum number of lines to read. Use for pagination of large files."}
  },
  "required": ["file_path"],
  "additionalProperties": false
}`

const writeDescription = `Writes content to a file. Creates the file if it does not exist; replaces it entirely if it does.

Usage:
- The path is absolute, or relative to the working directory {wd}. Missing parent directories are created.
- Use this tool when you intend to create a new file or replace the whole file. You do not need to read the file first.
- Prefer to edit existing files (with the edit_file tool) over creating new ones when possible.`

const writeSchema = `{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "Path where the file should be written: absolute, or relative to {wd}."},
    "content": {"type": "string", "description": "The text content to write to the file. This parameter is required."}
  },
  "required": ["file_path", "content"],
  "additionalProperties": false
}`

const editDescription = `Performs exact string replacements in files.

Usage:
- The path is absolute, or relative to the working directory {wd}.
- Read the file before editing it, so that old_string matches the file exactly.
- old_string is literal text (not a regex) and must occur exactly once in the file unless replace_all is true; add surrounding lines to make it unique. A file with CRLF line endings matches old_string written with LF and keeps its CRLFs.
- Preserve the exact indentation from the read output, and never include line-number prefixes in old_string or new_string.
- Prefer editing an existing file over creating a new one.
- Only use emojis if the user explicitly requests it.`

const editSchema = `{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "Path of the file to edit: absolute, or relative to {wd}."},
    "old_string": {"type": "string", "description": "The exact text to find and replace. Must be unique in the file unless replace_all is true."},
    "new_string": {"type": "string", "description": "The text to replace old_string with. Must be different from old_string."},
    "replace_all": {"type": "boolean", "default": false, "description": "If true, replace all occurrences of old_string. If false (default), old_string must be unique."}
  },
  "required": ["file_path", "old_string", "new_string"],
  "additionalProperties": false
}`

const globDescription = `Find files matching a glob pattern, returning the absolute paths of regular files (directories are not listed).

Supports ` + "`*`" + ` (any characters within a path segment), ` + "`**`" + ` (any directories), ` + "`?`" + ` (single character), ` + "`[abc]`" + ` (one character from a set), and ` + "`{a,b}`" + ` (alternatives), e.g. ` + "`*.py`, `src/**/*.py`, `*.{yml,yaml}`" + `.

The search root is ` + "`path`" + `: absolute, or relative to the working directory {wd}; without it, {wd}. A pattern without ` + "`/`" + ` matches the file name at any depth under the search root (` + "`*.py`" + ` matches src/app/main.py). A pattern containing ` + "`/`" + ` matches the search-root-relative path (` + "`src/**/*.py`" + `). A leading ` + "`/`" + ` anchors to the search root (` + "`/*.py`" + ` matches only top-level Python files); but when ` + "`path`" + ` is not given, a pattern starting with ` + "`/`" + ` is an absolute one and is searched from / (` + "`/etc/*.conf`" + `).

Leading-dot names are only matched when the pattern segment itself starts with ` + "`.`" + ` (use ` + "`.env`" + `, or ` + "`.github/**/*.yml`" + `). Because ` + "`**`" + ` will not descend into dot-directories, the bare form ` + "`*.yml`" + ` is *broader* than ` + "`**/*.yml`" + ` and is usually what you want. ` + "`..`" + ` is not allowed in patterns.`

const globSchema = `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Glob pattern to match files (e.g., '*.py', '**/*.py', 'src/**/*.md'). A pattern without '/' matches the file name at any depth; a pattern containing '/' matches the search-root-relative path; a leading '/' anchors to the search root."},
    "path": {"type": "string", "description": "Directory to search from: absolute, or relative to {wd}. Defaults to {wd} (to / for a pattern starting with '/')."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`

const grepDescription = `Search for a LITERAL text pattern across files (NOT regex).

The pattern is matched verbatim and case-sensitively: regex metacharacters are ordinary characters, not operators. To match any of several strings, run a separate grep for each; grep(pattern="foo|bar") searches for the literal text "foo|bar", and ` + "`.*` or `\\.`" + ` match those characters literally.
- If you genuinely need regex, use the execute tool with ` + "`grep -rE '<regex>' <dir>`" + ` instead.

The search covers ` + "`path`" + ` (a directory, recursively, or one file; absolute, or relative to the working directory {wd}; default {wd}), hidden files included and binary files skipped; ` + "`glob`" + ` limits it to matching files. Returns matching files or content per ` + "`output_mode`" + `, at most ` + "`max_count`" + ` matches (default {grep_max}); a note says when the search stopped early.`

const grepSchema = `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Text pattern to search for (literal string, not regex)."},
    "path": {"type": "string", "description": "Directory (or file) to search in: absolute, or relative to {wd}. Defaults to {wd}."},
    "glob": {"type": "string", "description": "Glob pattern (NOT regex) limiting which files are searched (e.g. '*.py', '*.{ts,tsx}'). A pattern without '/' matches the file name at any depth; a pattern containing '/' matches the search-root-relative path (e.g. 'src/**/*.py')."},
    "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"], "default": "files_with_matches", "description": "Shape of the returned text. 'files_with_matches' (default): newline-separated matching file paths. 'content': matching lines grouped by file under a '<path>:' header, each line indented and formatted '<line_number>: <line text>' (only the matched line, no surrounding context). 'count': one '<path>: <match_count>' line per file."},
    "max_count": {"type": "integer", "minimum": 1, "description": "Optional cap on the total number of matches returned across all files. Leave unset to use the configured default ({grep_max}). When the cap is hit, results are truncated and a note says so; narrow the pattern or path to see the rest."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`

const executeDescription = `Executes a shell command in an isolated sandbox and returns combined stdout/stderr with the exit code (truncated if very large).

Usage:
- The command runs with sh -c in the working directory {wd}: relative paths mean the same as in the file tools.
- Quote paths containing spaces (e.g. cd "/path/with spaces").
- Chain commands with ';' or '&&' (use '&&' when a command depends on the previous); do not use newlines except inside quoted strings.
- Use absolute paths and avoid ` + "`cd`" + ` so the working directory stays stable.
- ` + "`timeout`" + ` is in seconds: omit it for the sandbox's default, raise it for long-running commands (at most {max_timeout}); 0 means that maximum. A command that times out is killed together with every process it started and reports exit code 124.
- A background process (server &) keeps running after the command returns; redirect its output (server >log 2>&1 &).
- You MUST avoid using search commands like find and grep. Instead use the grep, glob tools to search. Use read_file rather than cat/head/tail.
    - execute(command="find . -name '*.py'")  # Use glob tool instead
    - execute(command="grep -r 'pattern' .")  # Use grep tool instead`

const executeSchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "Shell command to execute in the sandbox, in {wd}."},
    "timeout": {"type": "integer", "minimum": 0, "maximum": {max_timeout}, "description": "Optional timeout in seconds for this command. Overrides the default timeout. 0 means the maximum, {max_timeout} seconds."}
  },
  "required": ["command"],
  "additionalProperties": false
}`

const deleteDescription = `Deletes a file or directory from the filesystem.

Usage:
- Permanently removes the file or directory at the given path (absolute, or relative to the working directory {wd}).
- Deleting a directory removes it and everything inside it, recursively. Prefer deleting a directory in one call over deleting each file individually.
- This cannot be undone, so only delete paths you are sure are no longer needed.`

const deleteSchema = `{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "Path of the file or directory to delete: absolute, or relative to {wd}."}
  },
  "required": ["file_path"],
  "additionalProperties": false
}`
