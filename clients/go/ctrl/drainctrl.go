// Package drainctrl wires drainguard's drain into a controller-runtime
// manager.
//
// controller-runtime stops a manager with one context cancel that both shuts
// its work queues and cancels every reconcile in flight, so work is cut off
// mid-way. Under drainguard the manager is signalled only after the drain;
// this package makes the drain itself do the right thing:
//
//	dg := drainctrl.New(drainctrl.Options{Name: "my-operator"})
//	mgr, err := ctrl.NewManager(cfg, dg.ManagerOptions(ctrl.Options{...}))
//	err = ctrl.NewControllerManagedBy(mgr).For(&v1.Thing{}).Complete(dg.Reconciler("thing", r))
//	err = mgr.Start(dg.StopContext(ctrl.SetupSignalHandler()))
//
// When drainguard says drain: the gate in front of every reconciler refuses
// new requests at once (also those the queues still hand out after the
// manager stopped, with a cancelled context), the manager is stopped so its
// queues shut down, and every reconcile already running keeps a context that
// only the drain deadline cancels, so its last API writes succeed. When the
// last one returns, "drained" is written to drainguard before the reconcile
// returns, so it is out before mgr.Start does. The leader lease is released
// as the manager stops.
//
// Without $DRAINGUARD_SOCKET (and no Options.SocketPath) every function
// returns its argument unchanged: the same binary runs with or without
// drainguard.
package drainctrl

import (
	"context"
	"sync"
	"time"

	drainguard "github.com/drainguard/drainguard/clients/go"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// flushTimeout bounds the wait for "drained" to be written, should the
// connection be lost at that moment (drainguard takes a disconnect as
// drained anyway).
const flushTimeout = time.Second

// Options configure a Drain. The zero value is ready to use.
type Options struct {
	// SocketPath is the drain socket. Empty: $DRAINGUARD_SOCKET. When both
	// are empty the Drain is disabled and changes nothing.
	SocketPath string
	// Name tells drainguard who this is. Empty: the executable's base name.
	Name string
	// Logf receives the drain client's diagnostics. nil: silent.
	Logf func(format string, args ...interface{})
}

// Drain is drainguard's drain for one manager. Create it with New before
// the manager.
type Drain struct {
	client *drainguard.Client

	mu          sync.Mutex
	controllers map[string]*controller
}

// New connects to drainguard in the background (when there is a socket)
// and returns at once.
func New(opts Options) *Drain {
	d := &Drain{
		client:      drainguard.New(drainguard.Options{SocketPath: opts.SocketPath, Name: opts.Name, Logf: opts.Logf}),
		controllers: map[string]*controller{},
	}
	if d.client.Enabled() {
		registerMetrics()
		go d.watchOutcome()
	}
	return d
}

// Enabled reports whether there is a drainguard to talk to.
func (d *Drain) Enabled() bool { return d.client.Enabled() }

// Client is the underlying protocol client (Draining, Deadline, ...).
func (d *Drain) Client() *drainguard.Client { return d.client }

// Close ends the connection to drainguard (a disconnect counts as drained)
// and cancels the contexts of reconciles still running. Not needed at exit.
func (d *Drain) Close() error { return d.client.Close() }

// ManagerOptions returns o adjusted to the drain: the manager waits for its
// reconciles without a timeout of its own (GracefulShutdownTimeout
// negative, unless set; the drain deadline bounds them, and drainguard's
// stop signal and SIGKILL bound the rest), and the leader lease is released
// when the manager stops (LeaderElectionReleaseOnCancel), so a successor
// takes it within its RetryPeriod of this pod being done rather than after
// the LeaseDuration. Disabled: o unchanged.
func (d *Drain) ManagerOptions(o manager.Options) manager.Options {
	if !d.Enabled() {
		return o
	}
	if o.GracefulShutdownTimeout == nil {
		forever := time.Duration(-1)
		o.GracefulShutdownTimeout = &forever
	}
	o.LeaderElectionReleaseOnCancel = true
	return o
}

// StopContext returns a context for mgr.Start that is cancelled when parent
// is (the signal handler) or when the drain starts: the manager's queues
// shut down at once, its reconciles in flight run on through the gate.
// When nothing is in flight at the drain, it first waits (briefly) for
// "drained" to be written. Disabled: parent unchanged.
func (d *Drain) StopContext(parent context.Context) context.Context {
	if !d.Enabled() {
		return parent
	}
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-d.client.Draining():
			// In-flight work only goes down once the drain started: when it is
			// not zero now, the reconcile that ends last waits for the flush.
			if d.client.Inflight() == 0 {
				d.awaitDrainedSent()
			}
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx
}

// Reconciler puts the drain gate in front of r. name labels its metrics
// (use the controller's name). Disabled: r unchanged.
func (d *Drain) Reconciler(name string, r reconcile.Reconciler) reconcile.Reconciler {
	if !d.Enabled() {
		return r
	}
	return d.gate(name, r)
}

func (d *Drain) draining() bool {
	select {
	case <-d.client.Draining():
		return true
	default:
		return false
	}
}

func (d *Drain) awaitDrainedSent() {
	t := time.NewTimer(flushTimeout)
	defer t.Stop()
	select {
	case <-d.client.DrainedSent():
	case <-t.C:
	}
}

// watchOutcome records each controller's drain outcome: "drained" for those
// idle at the drain, "deadline" for those still busy when it passed.
func (d *Drain) watchOutcome() {
	select {
	case <-d.client.Draining():
	case <-d.client.WorkContext().Done(): // closed before any drain
		return
	}
	d.eachController((*controller).settleIfIdle)
	<-d.client.WorkContext().Done()
	d.eachController(func(c *controller) { c.settle(outcomeDeadline) })
}

func (d *Drain) eachController(fn func(*controller)) {
	d.mu.Lock()
	all := make([]*controller, 0, len(d.controllers))
	for _, c := range d.controllers {
		all = append(all, c)
	}
	d.mu.Unlock()
	for _, c := range all {
		fn(c)
	}
}
