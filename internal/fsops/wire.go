package fsops

import (
	"strconv"
)

// The JSON forms of FileInfo and GrepMatch carry their names and lines as
// RawString, so that they cross the helper's wire byte for byte. The keys
// are the field names, as encoding/json would write them; only strings that
// are not valid UTF-8 change form. They are written and read by hand: a
// large Ls, Glob or Grep has thousands of them. (ReadResult keeps its plain
// JSON: its Content is text, valid UTF-8 by contract, and a page is large.)

// MarshalJSON implements json.Marshaler.
func (fi FileInfo) MarshalJSON() ([]byte, error) {
	mt, err := fi.ModTime.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 64+len(fi.Path)+len(mt))
	b = append(b, `{"Path":`...)
	b = RawString(fi.Path).AppendJSON(b)
	b = append(b, `,"IsDir":`...)
	b = strconv.AppendBool(b, fi.IsDir)
	b = append(b, `,"Size":`...)
	b = strconv.AppendInt(b, fi.Size, 10)
	b = append(b, `,"ModTime":`...)
	b = append(b, mt...)
	b = append(b, `,"Mode":`...)
	b = strconv.AppendUint(b, uint64(fi.Mode), 10)
	return append(b, '}'), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (fi *FileInfo) UnmarshalJSON(data []byte) error {
	return eachField(data, func(key, val []byte) error {
		switch string(key) {
		case "Path":
			return readString(val, &fi.Path)
		case "IsDir":
			return readBool(val, &fi.IsDir)
		case "Size":
			return readInt64(val, &fi.Size)
		case "ModTime":
			return readTime(val, &fi.ModTime)
		case "Mode":
			return readUint32(val, (*uint32)(&fi.Mode))
		}
		return nil
	})
}

// MarshalJSON implements json.Marshaler.
func (m GrepMatch) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 40+len(m.Path)+len(m.Text))
	b = append(b, `{"Path":`...)
	b = RawString(m.Path).AppendJSON(b)
	b = append(b, `,"Line":`...)
	b = strconv.AppendInt(b, int64(m.Line), 10)
	b = append(b, `,"Text":`...)
	b = RawString(m.Text).AppendJSON(b)
	return append(b, '}'), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *GrepMatch) UnmarshalJSON(data []byte) error {
	return eachField(data, func(key, val []byte) error {
		switch string(key) {
		case "Path":
			return readString(val, &m.Path)
		case "Line":
			return readInt(val, &m.Line)
		case "Text":
			return readString(val, &m.Text)
		}
		return nil
	})
}
