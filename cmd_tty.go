package sandbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// Winsize is the size of a terminal in character cells.
type Winsize struct {
	Rows, Cols int
}

// ErrNoTerminal: Resize on a command that does not run on a terminal
// (Cmd.TTY unset).
var ErrNoTerminal = errors.New("sandbox: the command has no terminal")

// checkWinsize checks a terminal size: 1 to 65535 rows and columns.
func checkWinsize(w Winsize) error {
	if w.Rows <= 0 || w.Cols <= 0 || w.Rows > 0xffff || w.Cols > 0xffff {
		return fmt.Errorf("%w: terminal size %dx%d (rows and columns go from 1 to 65535)", ErrInvalidOption, w.Rows, w.Cols)
	}
	return nil
}

// ttyRequest makes req and co run c on a terminal when c.TTY is set: the
// request carries the size, always on an exec of its own (Resize writes to
// it), and the helper must say it has terminals.
func (c *Cmd) ttyRequest(req *proto.Request, co *callOptions) error {
	if c.TTY == nil {
		return nil
	}
	if err := checkWinsize(*c.TTY); err != nil {
		return err
	}
	req.TTY = &proto.Winsize{Rows: uint16(c.TTY.Rows), Cols: uint16(c.TTY.Cols)}
	req.Combined = false
	co.shared, co.stderr = false, nil
	return nil
}

// checkTTYHelper refuses a request on a terminal to a helper that predates
// terminals (it would run the command without one), before it is sent.
func checkTTYHelper(req proto.Request, hello proto.Hello) error {
	if req.TTY != nil && !hello.TTY {
		return fmt.Errorf("%w: the sandbox's helper cannot run commands on a terminal; it predates this library: make a new sandbox", ErrProtocolVersion)
	}
	return nil
}

// Resize changes the size of the terminal of a command started with TTY
// set, as a terminal window's resize does: its foreground program gets
// SIGWINCH and sees the new size. It returns once the size is sent (ctx
// bounds the send); a command that is not running on a terminal is
// ErrNoTerminal, one that finished ErrProcessDone.
func (c *Cmd) Resize(ctx context.Context, rows, cols int) error {
	if c.TTY == nil {
		return ErrNoTerminal
	}
	w := Winsize{Rows: rows, Cols: cols}
	if err := checkWinsize(w); err != nil {
		return err
	}
	if c.call == nil {
		return errors.New("sandbox: Resize before Start")
	}
	select {
	case <-c.awaited:
		return fmt.Errorf("sandbox: resize: %w", ErrProcessDone)
	default:
	}
	hc, ok := c.call.(*helperCall)
	if !ok {
		return ErrNoTerminal
	}
	payload := proto.EncodeWinsize(proto.Winsize{Rows: uint16(rows), Cols: uint16(cols)})
	// A helper that stops reading cannot hold the caller past ctx: the
	// write goes on alone until the call's stall watch drops the
	// connection.
	sent := make(chan error, 1)
	go func() { sent <- hc.out.WriteFrameContext(ctx, proto.KindResize, execRequestID, payload) }()
	var err error
	select {
	case err = <-sent:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-c.awaited:
			return fmt.Errorf("sandbox: resize: %w", ErrProcessDone)
		default:
		}
		return fmt.Errorf("sandbox: resize: %w", err)
	}
	return nil
}
