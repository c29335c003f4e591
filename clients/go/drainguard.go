// Package drainguard is the Go client of drainguard's drain protocol
// (version 1): it lets an operator learn that its pod is being stopped, stop
// taking new work, finish what is in flight and then tell drainguard so.
//
// A Client connects to the Unix socket named by $DRAINGUARD_SOCKET, says
// hello, and keeps the connection (reconnecting when needed). When drainguard
// asks for a drain:
//
//   - Draining() is closed and IntakeContext() is cancelled: take no new work;
//   - WorkContext() is cancelled at the drain deadline: abandon what is left;
//   - once the drain has started and no tracked work is in flight, the client
//     tells drainguard "drained" by itself (see Options.ManualDrained).
//
// Work is tracked with Begin, TryBegin or Track. Without a socket (the
// variable unset and no Options.SocketPath) the client is a harmless no-op:
// no drain ever comes, and tracking still works.
//
// All methods are safe for concurrent use.
package drainguard

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// SocketEnv is the environment variable that names the drain socket.
const SocketEnv = "DRAINGUARD_SOCKET"

// ErrDraining is returned by Track when the drain has started: the work was
// not run.
var ErrDraining = errors.New("drainguard: draining, no new work is taken")

// Options configure a Client. The zero value is ready to use.
type Options struct {
	// SocketPath is the drain socket. Empty: the value of $DRAINGUARD_SOCKET.
	// When both are empty the client is disabled (a no-op).
	SocketPath string
	// Name tells drainguard who this is (free text, for its logs).
	// Empty: the base name of the executable.
	Name string
	// Logf, if set, receives the client's diagnostics: connection problems,
	// errors reported by drainguard, the start of the drain. nil: silent.
	Logf func(format string, args ...interface{})
	// ReconnectDelay is the first pause before dialling again when the socket
	// is not there yet or the connection was lost; it doubles on every
	// failure up to MaxReconnectDelay. Defaults: 50ms and 1s.
	ReconnectDelay    time.Duration
	MaxReconnectDelay time.Duration
	// ManualDrained turns off the automatic "drained" message; call
	// Client.Drained when intake has stopped and in-flight work is finished.
	ManualDrained bool
}

// Client is a connection to drainguard that survives reconnects. Create it
// with New or Connect and release it with Close.
type Client struct {
	path, name         string
	logf               func(string, ...interface{})
	minDelay, maxDelay time.Duration
	manual             bool

	loopCtx  context.Context // lives until Close
	stopLoop context.CancelFunc
	loopDone chan struct{}

	ready, draining, drainedSent chan struct{}
	intake, work                 context.Context
	cancelIntake, cancelWork     context.CancelFunc
	readyOnce, drainedSentOnce   sync.Once
	closeOnce                    sync.Once

	mu         sync.Mutex
	drainBegun bool
	deadline   time.Time // zero until a drain named one
	timer      *time.Timer
	inflight   int
	drained    bool     // intake stopped and nothing in flight (or Drained called)
	sess       *session // the live connection, nil between connections
}

// New starts a client in the background and returns at once. Use Ready to
// learn when it is connected.
func New(opts Options) *Client {
	c := &Client{
		path:        opts.SocketPath,
		name:        opts.Name,
		logf:        opts.Logf,
		minDelay:    opts.ReconnectDelay,
		maxDelay:    opts.MaxReconnectDelay,
		manual:      opts.ManualDrained,
		loopDone:    make(chan struct{}),
		ready:       make(chan struct{}),
		draining:    make(chan struct{}),
		drainedSent: make(chan struct{}),
	}
	if c.path == "" {
		c.path = os.Getenv(SocketEnv)
	}
	if c.name == "" {
		c.name = filepath.Base(os.Args[0])
	}
	if c.logf == nil {
		c.logf = func(string, ...interface{}) {}
	}
	if c.minDelay <= 0 {
		c.minDelay = 50 * time.Millisecond
	}
	if c.maxDelay <= 0 {
		c.maxDelay = time.Second
	}
	if c.maxDelay < c.minDelay {
		c.maxDelay = c.minDelay
	}
	c.intake, c.cancelIntake = context.WithCancel(context.Background())
	c.work, c.cancelWork = context.WithCancel(context.Background())
	c.loopCtx, c.stopLoop = context.WithCancel(context.Background())

	if c.path == "" {
		c.readyOnce.Do(func() { close(c.ready) })
		close(c.loopDone)
		return c
	}
	go func() {
		defer close(c.loopDone)
		c.run()
	}()
	return c
}

// Connect is New followed by waiting until drainguard has welcomed the
// client (at once when the client is disabled). If ctx ends first, the
// client is closed and ctx's error returned.
func Connect(ctx context.Context, opts Options) (*Client, error) {
	c := New(opts)
	select {
	case <-c.ready:
		return c, nil
	case <-ctx.Done():
		c.Close()
		return nil, ctx.Err()
	}
}

// Enabled reports whether the client has a socket to talk to. A disabled
// client never sees a drain.
func (c *Client) Enabled() bool { return c.path != "" }

// Ready is closed when drainguard first welcomed the client, or at once when
// the client is disabled.
func (c *Client) Ready() <-chan struct{} { return c.ready }

// Draining is closed when drainguard asks for the drain. It is never closed
// on a disabled client, nor by Close.
func (c *Client) Draining() <-chan struct{} { return c.draining }

// IntakeContext is cancelled when the drain starts (and by Close): stop
// taking new work when it is done.
func (c *Client) IntakeContext() context.Context { return c.intake }

// WorkContext is cancelled at the drain deadline (and by Close): work still
// running then should give up, as the stop signal follows. Its Err is
// context.Canceled; Deadline tells the time.
func (c *Client) WorkContext() context.Context { return c.work }

// WorkContextFrom returns a context that carries parent's values (loggers,
// trace spans) but whose cancellation is WorkContext's: it is not cancelled
// when parent is. Use it for in-flight work whose own context is cancelled
// too early, such as a controller-runtime reconcile during shutdown.
func (c *Client) WorkContextFrom(parent context.Context) context.Context {
	return detached{values: parent, Context: c.work}
}

// Deadline returns the drain deadline once a drain has named one.
func (c *Client) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, !c.deadline.IsZero()
}

// Inflight returns the number of tracked pieces of work in flight.
func (c *Client) Inflight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight
}

// Begin counts one piece of work as in flight, even if the drain has already
// started, and returns the function that ends it. Calling done more than once
// has no further effect. Prefer TryBegin when taking new work.
func (c *Client) Begin() (done func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.beginLocked()
}

// TryBegin is Begin for new work: it refuses (ok false, done nil) once the
// drain has started. The check and the count are one step, so no work slips
// in after drainguard was told "drained".
func (c *Client) TryBegin() (done func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.drainBegun {
		return nil, false
	}
	return c.beginLocked(), true
}

// Track runs fn as tracked work with WorkContext as its context, and returns
// fn's error. Once the drain has started it runs nothing and returns
// ErrDraining.
func (c *Client) Track(fn func(ctx context.Context) error) error {
	done, ok := c.TryBegin()
	if !ok {
		return ErrDraining
	}
	defer done()
	return fn(c.work)
}

// Drained tells drainguard that intake has stopped and in-flight work is
// finished, now and again after any reconnect. It is needed only with
// Options.ManualDrained; calling it more than once is harmless.
func (c *Client) Drained() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drained = true
	c.sendDrainedLocked()
}

// DrainedSent is closed when "drained" was first written to drainguard.
func (c *Client) DrainedSent() <-chan struct{} { return c.drainedSent }

// Close ends the connection (drainguard takes a disconnect like "drained"),
// after flushing what was queued for it, and cancels IntakeContext and
// WorkContext. It always returns nil; further calls do nothing.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.stopLoop()
		<-c.loopDone
		c.mu.Lock()
		if c.timer != nil {
			c.timer.Stop()
		}
		c.mu.Unlock()
		c.cancelIntake()
		c.cancelWork()
	})
	return nil
}

func (c *Client) beginLocked() func() {
	c.inflight++
	c.sendLocked(inflightMsg(c.inflight))
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.inflight--
			c.sendLocked(inflightMsg(c.inflight))
			c.checkDrainedLocked()
		})
	}
}

// startDrain records a drain request; later requests can only bring the
// deadline forward.
func (c *Client) startDrain(m message) {
	deadline, known := m.drainDeadline(time.Now())
	c.mu.Lock()
	first := !c.drainBegun
	if first {
		c.drainBegun = true
		close(c.draining)
		c.cancelIntake()
	}
	if known && (c.deadline.IsZero() || deadline.Before(c.deadline)) {
		c.deadline = deadline
		if c.timer != nil {
			c.timer.Stop()
		}
		c.timer = time.AfterFunc(time.Until(deadline), c.cancelWork)
	}
	inflight := c.inflight
	c.checkDrainedLocked()
	c.mu.Unlock()
	if first { // not under the lock: Logf may call back into the client
		c.logf("drainguard: drain requested (deadline %s, %d in flight)", m.Deadline, inflight)
	}
}

// checkDrainedLocked says "drained" by itself once the drain has started and
// nothing is in flight, unless the user asked to do it.
func (c *Client) checkDrainedLocked() {
	if c.drainBegun && c.inflight == 0 && !c.manual {
		c.drained = true
	}
	c.sendDrainedLocked()
}

// sendDrainedLocked sends "drained" once per connection, once it is true.
func (c *Client) sendDrainedLocked() {
	if s := c.sess; c.drained && s != nil && s.welcomed && !s.drainedQueued {
		s.drainedQueued = true
		c.sendLocked(drainedMsg())
	}
}

func (c *Client) markDrainedSent() {
	c.drainedSentOnce.Do(func() { close(c.drainedSent) })
}

// detached has the values of one context and the cancellation of another.
type detached struct {
	context.Context // deadline, Done, Err
	values          context.Context
}

func (d detached) Value(key interface{}) interface{} { return d.values.Value(key) }
