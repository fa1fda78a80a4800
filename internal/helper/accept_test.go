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
// cancelled accept leaves the listener to the others waiting, and the last
// one cancelled closes it; closeAll ends it.
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

	// Two accepts wait: the cancelled one leaves the listener to the
	// other; the last one cancelled closes it (the library stopped its
	// egress: the address is free for another helper at once).
	waiting := func() int {
		acc.mu.Lock()
		defer acc.mu.Unlock()
		if ac := acc.m["tcp "+addr]; ac != nil {
			return ac.waiting
		}
		return 0
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	ctx3, cancel3 := context.WithCancel(context.Background())
	done3 := make(chan *proto.Result, 1)
	go func() { done <- tbl.accept(ctx2, &acc, 2, req, send) }()
	go func() { done3 <- tbl.accept(ctx3, &acc, 3, req, send) }()
	require.Eventually(t, func() bool { return waiting() == 2 }, 5*time.Second, 10*time.Millisecond)
	cancel2()
	select {
	case res := <-done:
		assert.Nil(t, res.Error, "a cancelled accept")
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled accept did not end")
	}
	assert.Equal(t, 1, waiting())
	c, err := net.DialTimeout("tcp", addr, time.Second)
	require.NoError(t, err, "the listener stays for the other accept")
	c.Close()
	cancel3()
	select {
	case <-done3:
	case <-time.After(5 * time.Second):
		t.Fatal("the accept did not end")
	}
	ctx4, cancel4 := context.WithCancel(context.Background())
	go func() { done <- tbl.accept(ctx4, &acc, 4, req, send) }()
	require.Eventually(t, func() bool { return waiting() == 1 }, 5*time.Second, 10*time.Millisecond)
	cancel4()
	<-done
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "the last accept cancelled closed the listener")

	go func() { done <- tbl.accept(context.Background(), &acc, 5, req, send) }()
	require.Eventually(t, func() bool { return waiting() == 1 }, 5*time.Second, 10*time.Millisecond, "a later accept listens again")
	acc.closeAll()
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "closeAll closed the listener")
	select {
	case res := <-done:
		assert.NotNil(t, res.Error, "closeAll ends the accept waiting")
	case <-time.After(5 * time.Second):
		t.Fatal("the accept outlived closeAll")
	}

	for _, bad := range []proto.Request{
		{Op: proto.OpAccept, Network: "unix", Address: "/x"},
		{Op: proto.OpAccept, Network: "tcp", Address: "nohostport"},
		{Op: proto.OpAccept, Network: "tcp", Address: addr, Direct: "/x", Token: "00"},
	} {
		assert.NotNil(t, validateRequest(&bad), "%+v", bad)
	}
}
