package helper

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stream buffers what the library sends within the credit it was
// granted; a byte more, data after its EOF, or a bad window is the library
// lying, which ends that stream (and only it); frames of unknown streams
// are dropped; none of it blocks.
func TestStreamCredit(t *testing.T) {
	var tbl streamTable
	send := func(proto.Kind, []byte) error { return nil }
	st, ctx := tbl.open(context.Background(), 1, proto.OpDial, send)
	other, otherCtx := tbl.open(context.Background(), 2, proto.OpDial, send)
	_ = other
	w := proto.StreamWindow(proto.OpDial)
	tbl.frame(proto.Frame{Kind: proto.KindData, ID: 1, Payload: make([]byte, w)})
	tbl.frame(proto.Frame{Kind: proto.KindData, ID: 99, Payload: make([]byte, 10)}) // unknown: dropped
	require.NoError(t, ctx.Err())
	p, err := st.next(ctx)
	require.NoError(t, err)
	assert.Len(t, p, w)
	tbl.frame(proto.Frame{Kind: proto.KindData, ID: 1, Payload: []byte{1}}) // no credit left: a lie
	<-ctx.Done()
	assert.ErrorIs(t, context.Cause(ctx), errLibraryLied)
	assert.NoError(t, otherCtx.Err(), "another stream goes on")

	tbl.frame(proto.Frame{Kind: proto.KindEOF, ID: 2})
	tbl.frame(proto.Frame{Kind: proto.KindData, ID: 2, Payload: []byte{1}}) // after EOF: a lie
	<-otherCtx.Done()
	assert.ErrorIs(t, context.Cause(otherCtx), errLibraryLied)

	_, ctx3 := tbl.open(context.Background(), 3, proto.OpWatch, send)
	tbl.frame(proto.Frame{Kind: proto.KindWindow, ID: 3, Payload: []byte{1}})
	<-ctx3.Done()
	assert.ErrorIs(t, context.Cause(ctx3), errLibraryLied)
	tbl.remove(1)
	tbl.remove(2)
	tbl.remove(3)
	assert.Empty(t, tbl.m)
}

// A refused connect is CodeRefused; a bad network or address is refused
// before anything is dialed.
func TestDialErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	var tbl streamTable
	res := tbl.dial(context.Background(), 1, proto.Request{Op: proto.OpDial, Network: "tcp", Address: addr}, func(proto.Kind, []byte) error {
		return errors.New("nothing is sent before the connect")
	})
	require.NotNil(t, res.Error)
	assert.Equal(t, proto.CodeRefused, res.Error.Code)
	for _, req := range []proto.Request{
		{Op: proto.OpDial, Network: "udp", Address: addr},
		{Op: proto.OpDial, Network: "tcp"},
		{Op: proto.OpDial, Network: "tcp", Address: "a\x00b"},
		{Op: proto.OpWatch, Path: "relative"},
	} {
		assert.NotNil(t, validateRequest(&req), "%+v", req)
	}
}
