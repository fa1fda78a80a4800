package tools

import (
	"encoding/base64"
	"fmt"
	"path"
	"strings"
)

// fileTypes is deepagents 0.7's extension map for files read_file returns
// as multimodal blocks; any other extension is "text".
var fileTypes = map[string]string{
	".png": "image", ".jpeg": "image", ".jpg": "image", ".webp": "image", ".gif": "image", ".heic": "image", ".heif": "image",
	".mp4": "video", ".mpeg": "video", ".mov": "video", ".avi": "video", ".flv": "video", ".mpg": "video", ".webm": "video",
	".wmv": "video", ".3gpp": "video", ".mkv": "video",
	".wav": "audio", ".mp3": "audio", ".aiff": "audio", ".aac": "audio", ".ogg": "audio", ".flac": "audio",
	".pdf": "file", ".ppt": "file", ".pptx": "file",
}

// mimeTypes maps extensions to MIME types, as Python's mimetypes guesses
// them for the media extensions (fixed here, not read from the host) plus
// common binary formats. Unknown extensions are application/octet-stream.
var mimeTypes = map[string]string{
	".png": "image/png", ".jpeg": "image/jpeg", ".jpg": "image/jpeg", ".webp": "image/webp", ".gif": "image/gif",
	".heic": "image/heic", ".heif": "image/heif", ".bmp": "image/bmp", ".ico": "image/vnd.microsoft.icon",
	".tif": "image/tiff", ".tiff": "image/tiff", ".svg": "image/svg+xml",
	".mp4": "video/mp4", ".mpeg": "video/mpeg", ".mpg": "video/mpeg", ".mov": "video/quicktime",
	".avi": "video/x-msvideo", ".flv": "video/x-flv", ".webm": "video/webm", ".wmv": "video/x-ms-wmv",
	".3gpp": "video/3gpp", ".mkv": "video/x-matroska",
	".wav": "audio/x-wav", ".mp3": "audio/mpeg", ".aiff": "audio/x-aiff", ".aac": "audio/aac",
	".ogg": "audio/ogg", ".flac": "audio/flac",
	".pdf": "application/pdf", ".ppt": "application/vnd.ms-powerpoint",
	".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	".zip":  "application/zip", ".tar": "application/x-tar", ".wasm": "application/wasm",
}

// fileTypeOf returns "image", "audio", "video", "file" or "text" by the
// extension of p, case-insensitively.
func fileTypeOf(p string) string {
	if t, ok := fileTypes[strings.ToLower(path.Ext(p))]; ok {
		return t
	}
	return "text"
}

// mimeTypeOf returns the MIME type for the extension of p.
func mimeTypeOf(p string) string {
	if t, ok := mimeTypes[strings.ToLower(path.Ext(p))]; ok {
		return t
	}
	return "application/octet-stream"
}

// mediaResult returns a file as base64 media: with its type by extension
// ("file" for binary files with another extension) and a short text.
func mediaResult(p, content, encoding string) Result {
	kind := fileTypeOf(p)
	if kind == "text" {
		kind = "file"
	}
	data := content
	if encoding != "base64" {
		data = base64.StdEncoding.EncodeToString([]byte(content))
	}
	mime := mimeTypeOf(p)
	desc := map[string]string{"image": "an image", "audio": "an audio file", "video": "a video", "file": "a binary file"}[kind]
	return Result{
		Text:  fmt.Sprintf("%s is %s (%s, %d bytes)%s", p, desc, mime, decodedLen(data), mediaNote),
		Media: &Media{Type: kind, MIMEType: mime, Data: data},
	}
}

// mediaNote ends the text of a Result with media.
const mediaNote = "; its content is attached as base64 data."

// TextOnly is the text of r for a tool result that cannot carry media (a
// framework whose tool results are strings): when r has media, the text
// says that the content is not shown.
func (r Result) TextOnly() string {
	if r.Media == nil {
		return r.Text
	}
	const note = "; its content cannot be shown (this tool returns text only)."
	if s, ok := strings.CutSuffix(r.Text, mediaNote); ok {
		return s + note
	}
	return r.Text + "\n(The file's content cannot be shown: this tool returns text only.)"
}

// decodedLen is the number of bytes a padded base64 string encodes.
func decodedLen(s string) int {
	n := len(s) / 4 * 3
	if strings.HasSuffix(s, "==") {
		n -= 2
	} else if strings.HasSuffix(s, "=") {
		n--
	}
	return max(n, 0)
}
