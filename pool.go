package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dockersandbox/sandbox/engine"
)

// Pool keeps sandboxes created ahead of time, so that Get hands one out at
// once. A sandbox from Get belongs to the caller, who closes it; the pool
// creates a replacement in the background. Pool is safe for concurrent use.
type Pool struct {
	cfg    poolOptions
	ready  chan pooled
	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	lastErr error // of the last background creation, nil after a success
	closed  bool
}

type pooled struct {
	sb      *Sandbox
	created time.Time
}

// A PoolOption configures NewPool.
type PoolOption func(*poolOptions) error

type poolOptions struct {
	size    int
	maxIdle time.Duration
	opts    []Option
}

// PoolSize sets how many ready sandboxes the pool keeps (default 2).
func PoolSize(n int) PoolOption {
	return func(o *poolOptions) error {
		if n < 1 || n > 1000 {
			return fmt.Errorf("pool size %d must be in [1, 1000]", n)
		}
		o.size = n
		return nil
	}
}

// PoolMaxIdle replaces a ready sandbox that waited this long (default 10
// minutes), so that none is handed out stale.
func PoolMaxIdle(d time.Duration) PoolOption {
	return func(o *poolOptions) error {
		if d <= 0 {
			return fmt.Errorf("pool max idle %v must be positive", d)
		}
		o.maxIdle = d
		return nil
	}
}

// PoolSandboxOptions are the options every sandbox of the pool is created with.
func PoolSandboxOptions(opts ...Option) PoolOption {
	return func(o *poolOptions) error {
		o.opts = append(o.opts, opts...)
		return nil
	}
}

// NewPool starts a pool and fills it in the background. Sandbox options are
// validated here, so a bad one fails NewPool with ErrInvalidOption.
func NewPool(ctx context.Context, opts ...PoolOption) (*Pool, error) {
	cfg := poolOptions{size: 2, maxIdle: 10 * time.Minute}
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
		}
	}
	if _, err := newOptions(cfg.opts, callNew, "New (PoolSandboxOptions)"); err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &Pool{
		cfg: cfg, ready: make(chan pooled, cfg.size), wake: make(chan struct{}, 1),
		ctx: pctx, cancel: cancel, done: make(chan struct{}),
	}
	go p.refill()
	return p, nil
}

// Get returns a ready sandbox, or creates one if none is ready. A ready
// sandbox whose container ended meanwhile (killed from outside) is closed,
// not handed out: Get asks the engine once (about a millisecond).
func (p *Pool) Get(ctx context.Context) (*Sandbox, error) {
	for {
		select {
		case it := <-p.ready:
			p.poke()
			if it.sb.healthy() && it.sb.runs(ctx) {
				return it.sb, nil
			}
			_ = it.sb.Close()
			continue
		default:
		}
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return nil, fmt.Errorf("sandbox: pool: %w", ErrClosed)
		}
		p.poke()
		return p.create(ctx)
	}
}

// Ready returns how many sandboxes are ready to be handed out.
func (p *Pool) Ready() int { return len(p.ready) }

// WaitReady waits until a sandbox is ready to be handed out, so that the
// next Get takes no creation: right after NewPool none is (the first one
// takes as long as New, about a second). It returns nil then; the error of
// a background creation that failed (the pool keeps trying); ErrClosed if
// the pool is closed; or the context's error.
func (p *Pool) WaitReady(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		p.mu.Lock()
		closed, err := p.closed, p.lastErr
		p.mu.Unlock()
		switch {
		case closed:
			return fmt.Errorf("sandbox: pool: %w", ErrClosed)
		case len(p.ready) > 0:
			return nil
		case err != nil:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Err returns the error of the pool's last background creation, if it
// failed (a missing image, say); nil once one succeeds.
func (p *Pool) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// Close stops refilling and removes the ready sandboxes. Sandboxes handed
// out by Get are not affected.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	<-p.done
	var errs []error
	for {
		select {
		case it := <-p.ready:
			errs = append(errs, it.sb.Close())
		default:
			return errors.Join(errs...)
		}
	}
}

func (p *Pool) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// create makes one sandbox with its shared channel open.
func (p *Pool) create(ctx context.Context) (*Sandbox, error) {
	sb, err := New(ctx, p.cfg.opts...)
	if err != nil {
		return nil, err
	}
	_, _ = sb.channel(ctx) // warm: the first operation need not open it
	return sb, nil
}

// refill keeps the pool full and fresh until the pool closes.
func (p *Pool) refill() {
	defer close(p.done)
	backoff := time.Second
	tick := time.NewTicker(min(p.cfg.maxIdle/4, time.Minute))
	defer tick.Stop()
	for {
		p.expire()
		for len(p.ready) < cap(p.ready) && p.ctx.Err() == nil {
			sb, err := p.create(p.ctx)
			p.mu.Lock()
			p.lastErr = err
			p.mu.Unlock()
			if err != nil {
				break
			}
			backoff = time.Second
			p.ready <- pooled{sb: sb, created: time.Now()} // only refill fills: never blocks
		}
		wait := tick.C
		var retry <-chan time.Time
		if p.Err() != nil {
			retry = time.After(backoff)
			backoff = min(2*backoff, 30*time.Second)
		}
		select {
		case <-p.ctx.Done():
			return
		case <-p.wake:
		case <-wait:
		case <-retry:
		}
	}
}

// expire removes ready sandboxes that waited longer than the idle limit.
func (p *Pool) expire() {
	for range len(p.ready) {
		select {
		case it := <-p.ready:
			if time.Since(it.created) < p.cfg.maxIdle && it.sb.healthy() {
				p.ready <- it
			} else {
				_ = it.sb.Close()
			}
		default:
			return
		}
	}
}

// runs reports whether the engine does not say the sandbox's container
// ended: the channel of a container killed from outside does not always
// break at once (under gVisor its stream may stay open). It asks for at
// most a second; an engine that does not answer is not an answer.
func (s *Sandbox) runs(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	info, err := s.eng.Inspect(ctx, s.id)
	return !errors.Is(err, engine.ErrNotFound) && (err != nil || !ended(info.State))
}

// healthy reports whether the sandbox's shared channel still works (it
// breaks when the container dies).
func (s *Sandbox) healthy() bool {
	s.chMu.Lock()
	defer s.chMu.Unlock()
	return !s.closed.Load() && (s.opts.noChannel || s.ch != nil && !s.ch.broken())
}
