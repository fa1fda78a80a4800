// Package iox holds the small io helpers that more than one package of
// the module needs.
package iox

import "io"

// CountWriter counts the bytes written through it to W.
type CountWriter struct {
	W io.Writer
	N int64
}

func (c *CountWriter) Write(b []byte) (int, error) {
	n, err := c.W.Write(b)
	c.N += int64(n)
	return n, err
}

// CountReader counts the bytes read through it from R.
type CountReader struct {
	R io.Reader
	N int64
}

func (c *CountReader) Read(b []byte) (int, error) {
	n, err := c.R.Read(b)
	c.N += int64(n)
	return n, err
}
