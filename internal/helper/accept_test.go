package helper

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An accept waits for a connection to the helper's listener, opens its
// stream with the connection's addresses and carries its bytes; a
// cancelled accept leaves the listener to the next; closeAll ends it.
func TestAccept(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	var (
		tbl streamTable
		acc acceptors
		mu  sync.Mutex
		got []proto.Kind
	)
	defer acc.closeAll()
	send := func(k proto.Kind, p []byte) error {
		mu.Lock()
		got = append(got, k)
		mu.Unlock()
		return nil
	}
	req := proto.Request{Op: proto.OpAccept, Network: "tcp", Address: addr}
	require.Nil(t, validateRequest(&req))

	// A cancelled accept ends with an empty Result.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *proto.Result, 1)
	go func() { done <- tbl.accept(ctx, &acc, 1, req, send) }()
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "the listener is up")
	// The connection just made and closed went to accept 1: it opened its
	// stream, and ends once the library's side closes too.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0 && got[0] == proto.KindOpen
	}, 5*time.Second, 10*time.Millisecond)
	tbl.frame(proto.Frame{ID: 1, Kind: proto.KindEOF})
	select {
	case res := <-done:
		assert.Nil(t, res.Error)
	case <-time.After(5 * time.Second):
		t.Fatal("the accept did not carry the connection")
	}
	cancel()
	mu.Lock()
	assert.Contains(t, got, proto.KindEOF, "the connection's end went up")
	mu.Unlock()

	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- tbl.accept(ctx, &acc, 2, req, send) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case res := <-done:
		assert.Nil(t, res.Error, "a cancelled accept")
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled accept did not end")
	}

	acc.closeAll()
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "closeAll closed the listener")

	for _, bad := range []proto.Request{
		{Op: proto.OpAccept, Network: "unix", Address: "/x"},
		{Op: proto.OpAccept, Network: "tcp", Address: "nohostport"},
		{Op: proto.OpAccept, Network: "tcp", Address: addr, Direct: "/x", Token: "00"},
	} {
		assert.NotNil(t, validateRequest(&bad), "%+v", bad)
	}
}
