package drainctrl

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// gate is the drain gate in front of one controller's reconciler.
type gate struct {
	*controller
	r reconcile.Reconciler
}

// controller is the drain state of one controller name, shared by every
// reconciler wrapped under that name.
type controller struct {
	d    *Drain
	name string

	mu       sync.Mutex
	inflight int
	settled  bool // the drain outcome is recorded
}

func (d *Drain) gate(name string, r reconcile.Reconciler) gate {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.controllers[name]
	if !ok {
		c = &controller{d: d, name: name}
		d.controllers[name] = c
		inflightGauge.WithLabelValues(name).Set(0)
	}
	return gate{controller: c, r: r}
}

func (g gate) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// A cancelled ctx: the manager stopped and its queue still hands out
	// what it holds. Running it would only fail on the cancelled context.
	if ctx.Err() != nil {
		refusedCounter.WithLabelValues(g.name).Inc()
		return reconcile.Result{}, nil
	}
	done, ok := g.d.client.TryBegin()
	if !ok {
		// Draining: take no new work. Dropping the request is safe: the next
		// pod lists every object when it starts and reconciles it.
		refusedCounter.WithLabelValues(g.name).Inc()
		return reconcile.Result{}, nil
	}
	g.add(1)
	defer g.end(done)

	// ctx is cancelled when the manager stops, which the drain does at its
	// start. This one keeps ctx's values (logger, reconcile ID) and lives
	// until the drain deadline; a stop without a drain still cancels it.
	work, cancel := context.WithCancel(g.d.client.WorkContextFrom(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if !g.d.draining() {
			cancel()
		}
	})
	defer stop()
	return g.r.Reconcile(work, req)
}

// end finishes one reconcile. The one that leaves nothing in flight during
// the drain returns only once "drained" is written: the controller's
// workers, and so mgr.Start, wait for it.
func (c *controller) end(done func()) {
	done()
	idle := c.add(-1) == 0
	if !c.d.draining() {
		return
	}
	if idle && c.d.client.WorkContext().Err() == nil { // before the deadline
		c.settle(outcomeDrained)
	}
	if c.d.client.Inflight() == 0 {
		c.d.awaitDrainedSent()
	}
}

func (c *controller) add(n int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight += n
	inflightGauge.WithLabelValues(c.name).Set(float64(c.inflight))
	return c.inflight
}

// settleIfIdle records "drained" for a controller with nothing in flight.
func (c *controller) settleIfIdle() {
	c.mu.Lock()
	idle := c.inflight == 0
	c.mu.Unlock()
	if idle {
		c.settle(outcomeDrained)
	}
}

// settle records the controller's drain outcome, once.
func (c *controller) settle(outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.settled {
		return
	}
	c.settled = true
	outcomeGauge.WithLabelValues(c.name, outcome).Set(1)
}
