package drainctrl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Every wait ends in a failure after this long; nothing sleeps to let
// something happen.
const waitTimeout = 5 * time.Second

// peer is the drainguard side of the protocol on a Unix socket: it welcomes
// the client, sends drain when told, and records what the client says.
type peer struct {
	t     *testing.T
	path  string
	conn  chan net.Conn
	lines chan map[string]interface{}
}

func newPeer(t *testing.T) *peer {
	t.Helper()
	dir, err := os.MkdirTemp("", "dgctrl") // socket paths are short; t.TempDir can be long
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &peer{t: t, path: filepath.Join(dir, "drain.sock"), conn: make(chan net.Conn, 1), lines: make(chan map[string]interface{}, 64)}
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		t.Cleanup(func() { c.Close() })
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			var m map[string]interface{}
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			if m["type"] == "hello" {
				fmt.Fprintln(c, `{"type":"welcome","protocol":1}`)
				p.conn <- c
			}
			p.lines <- m
		}
		close(p.lines)
	}()
	return p
}

// connected waits for the client's hello and returns the connection.
func (p *peer) connected() net.Conn {
	p.t.Helper()
	select {
	case c := <-p.conn:
		return c
	case <-time.After(waitTimeout):
		p.t.Fatal("no hello from the client")
		return nil
	}
}

func (p *peer) drain(c net.Conn, remaining time.Duration) {
	deadline := time.Now().Add(remaining).UTC().Format("2006-01-02T15:04:05.000Z")
	fmt.Fprintf(c, `{"type":"drain","deadline":%q,"remainingMs":%d}`+"\n", deadline, remaining.Milliseconds())
}

// next returns the next message of type typ (others are skipped).
func (p *peer) next(typ string) map[string]interface{} {
	p.t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case m, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("connection closed before %q", typ)
			}
			if m["type"] == typ {
				return m
			}
		case <-timeout:
			p.t.Fatalf("no %q from the client", typ)
		}
	}
}

// got reports whether a message of type typ has arrived, without waiting.
func (p *peer) got(typ string) bool {
	for {
		select {
		case m := <-p.lines:
			if m["type"] == typ {
				return true
			}
		default:
			return false
		}
	}
}

// blocking is a reconciler that runs until released, recording its context.
type blocking struct {
	started chan context.Context
	release chan struct{}
}

func newBlocking() *blocking {
	return &blocking{started: make(chan context.Context, 8), release: make(chan struct{})}
}

func (b *blocking) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	b.started <- ctx
	select {
	case <-b.release:
		return reconcile.Result{}, ctx.Err()
	case <-ctx.Done():
		return reconcile.Result{}, ctx.Err()
	}
}

func (b *blocking) awaitStart(t *testing.T) context.Context {
	t.Helper()
	select {
	case ctx := <-b.started:
		return ctx
	case <-time.After(waitTimeout):
		t.Fatal("the reconciler did not start")
		return nil
	}
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

var req = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "obj"}}

func enabled(t *testing.T, p *peer) *Drain {
	d := New(Options{SocketPath: p.path, Name: "test"})
	t.Cleanup(func() { d.Close() })
	return d
}

func TestDisabledChangesNothing(t *testing.T) {
	t.Setenv("DRAINGUARD_SOCKET", "")
	d := New(Options{})
	defer d.Close()
	r := newBlocking()
	if got := d.Reconciler("c", r); got != reconcile.Reconciler(r) {
		t.Fatalf("Reconciler wrapped the reconciler: %T", got)
	}
	thirty := 30 * time.Second
	in := manager.Options{GracefulShutdownTimeout: &thirty}
	if out := d.ManagerOptions(in); out.GracefulShutdownTimeout != &thirty || out.LeaderElectionReleaseOnCancel {
		t.Fatalf("ManagerOptions changed the options: %+v", out)
	}
	ctx := context.Background()
	if d.StopContext(ctx) != ctx {
		t.Fatal("StopContext wrapped the context")
	}
}

func TestManagerOptions(t *testing.T) {
	d := enabled(t, newPeer(t))
	out := d.ManagerOptions(manager.Options{})
	if out.GracefulShutdownTimeout == nil || *out.GracefulShutdownTimeout >= 0 || !out.LeaderElectionReleaseOnCancel {
		t.Fatalf("want a negative GracefulShutdownTimeout and LeaderElectionReleaseOnCancel, got %v %v", out.GracefulShutdownTimeout, out.LeaderElectionReleaseOnCancel)
	}
	ten := 10 * time.Second
	if out := d.ManagerOptions(manager.Options{GracefulShutdownTimeout: &ten}); *out.GracefulShutdownTimeout != ten {
		t.Fatal("a GracefulShutdownTimeout the user set was replaced")
	}
}

// The heart of it: at the drain the manager's context is cancelled (as its
// stop does), the reconcile in flight keeps a live context, new requests are
// refused, and "drained" is written before the last reconcile returns.
func TestDrainKeepsInFlightAliveAndRefusesNewWork(t *testing.T) {
	p := newPeer(t)
	d := enabled(t, p)
	r := newBlocking()
	gate := d.Reconciler("drain-test", r)
	conn := p.connected()

	mgrCtx, stopManager := context.WithCancel(context.Background())
	defer stopManager()
	stop := d.StopContext(context.Background())
	returned := make(chan struct{})
	var rerr error
	go func() {
		defer close(returned)
		_, rerr = gate.Reconcile(mgrCtx, req)
	}()
	work := r.awaitStart(t)
	if n := testutil.ToFloat64(inflightGauge.WithLabelValues("drain-test")); n != 1 {
		t.Fatalf("in-flight gauge %v, want 1", n)
	}

	p.drain(conn, 10*time.Second)
	wait(t, stop.Done(), "the StopContext to be cancelled at the drain")
	stopManager() // what the manager's stop does to every reconcile's context
	if _, err := gate.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Reconcile(mgrCtx, req); err != nil { // queued before the stop, handed out after it
		t.Fatal(err)
	}
	select {
	case ctx := <-r.started:
		t.Fatalf("a request was reconciled during the drain (ctx err %v)", ctx.Err())
	default:
	}
	if work.Err() != nil {
		t.Fatalf("the in-flight reconcile's context was cancelled by the manager's stop: %v", work.Err())
	}
	if p.got("drained") {
		t.Fatal("drained before the in-flight reconcile returned")
	}

	close(r.release)
	wait(t, returned, "the reconcile to return")
	if rerr != nil {
		t.Fatalf("the in-flight reconcile failed: %v", rerr)
	}
	select {
	case <-d.Client().DrainedSent():
	default:
		t.Fatal("the last reconcile returned before drained was written")
	}
	p.next("drained")
	if n := testutil.ToFloat64(refusedCounter.WithLabelValues("drain-test")); n != 2 {
		t.Fatalf("refused %v, want 2", n)
	}
	if n := testutil.ToFloat64(outcomeGauge.WithLabelValues("drain-test", outcomeDrained)); n != 1 {
		t.Fatalf("outcome drained %v, want 1", n)
	}
	if n := testutil.ToFloat64(inflightGauge.WithLabelValues("drain-test")); n != 0 {
		t.Fatalf("in-flight gauge %v, want 0", n)
	}
}

// Nothing in flight: the manager is stopped only once "drained" is written.
func TestIdleDrainStopsAfterDrainedIsWritten(t *testing.T) {
	p := newPeer(t)
	d := enabled(t, p)
	conn := p.connected()
	stop := d.StopContext(context.Background())
	p.drain(conn, 10*time.Second)
	wait(t, stop.Done(), "the StopContext to be cancelled")
	select {
	case <-d.Client().DrainedSent():
	default:
		t.Fatal("the manager was stopped before drained was written")
	}
	p.next("drained")
}

// A stop without a drain (the stop signal, no drain asked) cancels the
// reconciles as controller-runtime does.
func TestStopWithoutDrainCancels(t *testing.T) {
	p := newPeer(t)
	d := enabled(t, p)
	r := newBlocking()
	gate := d.Reconciler("nodrain-test", r)
	p.connected()
	mgrCtx, stopManager := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() {
		_, err := gate.Reconcile(mgrCtx, req)
		returned <- err
	}()
	work := r.awaitStart(t)
	stopManager()
	wait(t, work.Done(), "the reconcile's context to be cancelled")
	if err := <-returned; !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

// At the drain deadline the reconcile still running is cancelled, and the
// controller's outcome is "deadline".
func TestDeadlineCancelsWhatIsLeft(t *testing.T) {
	p := newPeer(t)
	d := enabled(t, p)
	r := newBlocking()
	gate := d.Reconciler("deadline-test", r)
	conn := p.connected()
	returned := make(chan error, 1)
	go func() {
		_, err := gate.Reconcile(context.Background(), req)
		returned <- err
	}()
	work := r.awaitStart(t)
	p.drain(conn, 200*time.Millisecond)
	wait(t, work.Done(), "the drain deadline to cancel the reconcile")
	if err := <-returned; !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	p.next("drained")
	if n := testutil.ToFloat64(outcomeGauge.WithLabelValues("deadline-test", outcomeDeadline)); n != 1 {
		t.Fatalf("outcome deadline %v, want 1", n)
	}
	if n := testutil.ToFloat64(outcomeGauge.WithLabelValues("deadline-test", outcomeDrained)); n != 0 {
		t.Fatal("both outcomes recorded")
	}
}

// The gate keeps the values of the manager's context (its logger, the
// reconcile ID) in the context it gives the reconciler.
func TestValuesAreKept(t *testing.T) {
	type key struct{}
	p := newPeer(t)
	d := enabled(t, p)
	r := newBlocking()
	close(r.release)
	gate := d.Reconciler("values-test", r)
	if _, err := gate.Reconcile(context.WithValue(context.Background(), key{}, "v"), req); err != nil {
		t.Fatal(err)
	}
	if got := r.awaitStart(t).Value(key{}); got != "v" {
		t.Fatalf("value %v, want v", got)
	}
}
