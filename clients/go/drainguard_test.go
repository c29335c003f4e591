package drainguard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every wait in these tests ends in a failure after this long; nothing
// sleeps to let something happen.
const waitTimeout = 5 * time.Second

// fakeServer is a drainguard stand-in on a Unix socket in a temp directory.
type fakeServer struct {
	t     *testing.T
	path  string
	ln    net.Listener
	conns chan *fakeConn
}

// fakeConn is one accepted client; lines holds what it sent, decoded.
type fakeConn struct {
	t     *testing.T
	conn  net.Conn
	lines chan map[string]interface{}
	eof   chan struct{} // closed when the client closed its side
}

func socketPath(t *testing.T) string {
	// Unix socket paths are short (108 bytes); t.TempDir can be long.
	dir, err := os.MkdirTemp("", "dg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "drain.sock")
}

func newFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	s := &fakeServer{t: t, path: socketPath(t)}
	s.listen()
	return s
}

// listen starts accepting on s.path (separate so a test can start late).
func (s *fakeServer) listen() {
	s.t.Helper()
	ln, err := net.Listen("unix", s.path)
	if err != nil {
		s.t.Fatal(err)
	}
	s.ln = ln
	s.conns = make(chan *fakeConn, 16)
	s.t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.t.Cleanup(func() { conn.Close() })
			fc := &fakeConn{t: s.t, conn: conn, lines: make(chan map[string]interface{}, 64), eof: make(chan struct{})}
			go fc.read()
			s.conns <- fc
		}
	}()
}

func (fc *fakeConn) read() {
	defer close(fc.eof)
	sc := bufio.NewScanner(fc.conn)
	for sc.Scan() {
		var m map[string]interface{}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fc.t.Errorf("client sent a line that is not JSON: %q", sc.Text())
			return
		}
		fc.lines <- m
	}
}

func (s *fakeServer) accept() *fakeConn {
	s.t.Helper()
	select {
	case fc := <-s.conns:
		return fc
	case <-time.After(waitTimeout):
		s.t.Fatal("timed out waiting for the client to connect")
		return nil
	}
}

// acceptHello accepts a connection, checks the hello and answers welcome.
func (s *fakeServer) acceptHello() *fakeConn {
	s.t.Helper()
	fc := s.accept()
	m := fc.next()
	if m["type"] != "hello" || m["protocol"] != float64(1) || m["pid"] != float64(os.Getpid()) {
		s.t.Fatalf("first message is not a proper hello: %v", m)
	}
	fc.send(`{"type":"welcome","protocol":1}`)
	return fc
}

func (fc *fakeConn) send(line string) {
	fc.t.Helper()
	if _, err := fc.conn.Write([]byte(line + "\n")); err != nil {
		fc.t.Fatal(err)
	}
}

func (fc *fakeConn) drain(remaining time.Duration) {
	fc.t.Helper()
	deadline := time.Now().Add(remaining).UTC().Format("2006-01-02T15:04:05.000Z")
	fc.send(fmt.Sprintf(`{"type":"drain","deadline":%q,"remainingMs":%d,"future":true}`, deadline, remaining.Milliseconds()))
}

func (fc *fakeConn) next() map[string]interface{} {
	fc.t.Helper()
	select {
	case m := <-fc.lines:
		return m
	case <-fc.eof:
		select { // lines were all queued before eof was closed
		case m := <-fc.lines:
			return m
		default:
		}
		fc.t.Fatal("client closed the connection instead of sending a message")
	case <-time.After(waitTimeout):
		fc.t.Fatal("timed out waiting for a message from the client")
	}
	return nil
}

// expect reads the next message and checks its type.
func (fc *fakeConn) expect(typ string) map[string]interface{} {
	fc.t.Helper()
	m := fc.next()
	if m["type"] != typ {
		fc.t.Fatalf("got %v, want a %q message", m, typ)
	}
	return m
}

// expectInflight reads inflight messages until one reports n. (The client
// may skip a count it had no time to write before a newer one.)
func (fc *fakeConn) expectInflight(n int) {
	fc.t.Helper()
	for {
		m := fc.expect("inflight")
		if m["count"] == float64(n) {
			return
		}
	}
}

func (fc *fakeConn) expectEOF() {
	fc.t.Helper()
	select {
	case m := <-fc.lines:
		fc.t.Fatalf("got %v, want the connection closed", m)
	case <-fc.eof:
		select {
		case m := <-fc.lines:
			fc.t.Fatalf("got %v, want the connection closed", m)
		default:
		}
	case <-time.After(waitTimeout):
		fc.t.Fatal("timed out waiting for the client to close the connection")
	}
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// logSink collects the client's log lines.
type logSink chan string

func (l logSink) logf(format string, args ...interface{}) {
	select {
	case l <- fmt.Sprintf(format, args...):
	default: // the test is not listening; do not block the client
	}
}

// waitLog waits for a log line containing sub.
func (l logSink) waitLog(t *testing.T, sub string) string {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case line := <-l:
			if strings.Contains(line, sub) {
				return line
			}
		case <-timeout:
			t.Fatalf("timed out waiting for a log line containing %q", sub)
		}
	}
}

func newClient(t *testing.T, opts Options) *Client {
	t.Helper()
	c := New(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestHelloWelcome(t *testing.T) {
	srv := newFakeServer(t)
	c := newClient(t, Options{SocketPath: srv.path, Name: "test-operator"})
	if !c.Enabled() {
		t.Fatal("client with a socket path is not enabled")
	}
	fc := srv.accept()
	hello := fc.expect("hello")
	if hello["name"] != "test-operator" || hello["protocol"] != float64(1) || hello["pid"] != float64(os.Getpid()) {
		t.Fatalf("bad hello: %v", hello)
	}
	if isClosed(c.Ready()) {
		t.Fatal("ready before welcome")
	}
	fc.send(`{"type":"surprise","protocol":9}`) // unknown types are ignored
	fc.send(`{"type":"welcome","protocol":1,"extra":{"a":[1,2]}}`)
	waitClosed(t, c.Ready(), "Ready after welcome")
	if isClosed(c.Draining()) || c.IntakeContext().Err() != nil || c.WorkContext().Err() != nil {
		t.Fatal("drain state set without a drain")
	}
}

func TestConnectWaitsForWelcome(t *testing.T) {
	srv := newFakeServer(t)
	result := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		c, err := Connect(ctx, Options{SocketPath: srv.path})
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
		result <- err
	}()
	srv.acceptHello()
	select {
	case err := <-result:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Connect did not return after welcome")
	}
}

func TestConnectGivesUpWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := Connect(ctx, Options{SocketPath: socketPath(t)})
	if c != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Connect = %v, %v; want nil, context.Canceled", c, err)
	}
}

func TestDrainStopsIntakeButNotWork(t *testing.T) {
	srv := newFakeServer(t)
	c := newClient(t, Options{SocketPath: srv.path})
	fc := srv.acceptHello()
	waitClosed(t, c.Ready(), "Ready")

	done := c.Begin()
	fc.expectInflight(1)
	fc.drain(time.Minute)

	waitClosed(t, c.Draining(), "Draining")
	waitClosed(t, c.IntakeContext().Done(), "IntakeContext cancelled")
	if err := c.WorkContext().Err(); err != nil {
		t.Fatalf("WorkContext cancelled at the drain start: %v", err)
	}
	deadline, ok := c.Deadline()
	if left := time.Until(deadline); !ok || left < 50*time.Second || left > time.Minute {
		t.Fatalf("Deadline() = %v, %v; want about a minute from now", deadline, ok)
	}
	if d, ok := c.TryBegin(); ok || d != nil {
		t.Fatal("TryBegin took work during the drain")
	}
	ran := false
	if err := c.Track(func(context.Context) error { ran = true; return nil }); !errors.Is(err, ErrDraining) || ran {
		t.Fatalf("Track during the drain: err %v, ran %v; want ErrDraining, not run", err, ran)
	}
	if isClosed(c.DrainedSent()) {
		t.Fatal("drained sent with work in flight")
	}
	done()
	fc.expectInflight(0)
	fc.expect("drained")
	waitClosed(t, c.DrainedSent(), "DrainedSent")
}

func TestDeadlineCancelsWork(t *testing.T) {
	srv := newFakeServer(t)
	c := newClient(t, Options{SocketPath: srv.path})
	fc := srv.acceptHello()

	type key struct{}
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	cancelParent()
	ctx := c.WorkContextFrom(parent)
	if ctx.Err() != nil || ctx.Value(key{}) != "v" {
		t.Fatalf("WorkContextFrom: err %v, value %v; want live, with the parent's value", ctx.Err(), ctx.Value(key{}))
	}
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()

	started := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		result <- c.Track(func(work context.Context) error {
			close(started)
			<-work.Done()
			return work.Err()
		})
	}()
	waitClosed(t, started, "tracked work to start")
	fc.expectInflight(1)
	fc.drain(20 * time.Millisecond)

	waitClosed(t, c.WorkContext().Done(), "WorkContext cancelled at the deadline")
	waitClosed(t, child.Done(), "a context derived from WorkContextFrom cancelled")
	select {
	case err := <-result:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Track returned %v, want context.Canceled", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("tracked work did not end at the deadline")
	}
	fc.expectInflight(0)
	fc.expect("drained")
}

func TestDrainedAtOnceWhenIdle(t *testing.T) {
	srv := newFakeServer(t)
	c := newClient(t, Options{SocketPath: srv.path})
	fc := srv.acceptHello()
	waitClosed(t, c.Ready(), "Ready")
	fc.drain(time.Minute)
	fc.expect("drained") // nothing else first: no inflight, nothing in flight
	waitClosed(t, c.DrainedSent(), "DrainedSent")
}

func TestDrainedAfterTheLastDone(t *testing.T) {
	srv := newFakeServer(t)
	c := newClient(t, Options{SocketPath: srv.path})
	fc := srv.acceptHello()
	waitClosed(t, c.Ready(), "Ready")

	first := c.Begin()
	fc.expectInflight(1)
	second, ok := c.TryBegin()
	if !ok {
		t.Fatal("TryBegin refused before any drain")
	}
	fc.expectInflight(2)
	fc.drain(time.Minute)
	waitClosed(t, c.Draining(), "Draining")

	first()
	first() // done is idempotent
	fc.expectInflight(1)
	if n := c.Inflight(); n != 1 {
		t.Fatalf("Inflight() = %d after a double done, want 1", n)
	}
	second()
	fc.expect("inflight") // 0: the message after inflight 1 must not be drained
	fc.expect("drained")
}

func TestManualDrained(t *testing.T) {
	srv := newFakeServer(t)
	c := newClient(t, Options{SocketPath: srv.path, ManualDrained: true})
	fc := srv.acceptHello()
	waitClosed(t, c.Ready(), "Ready")
	fc.drain(time.Minute)
	waitClosed(t, c.Draining(), "Draining")

	// No automatic drained at the drain start nor when the count reaches 0:
	// the next messages are the counts only.
	done := c.Begin()
	fc.expectInflight(1)
	done()
	fc.expectInflight(0)
	done = c.Begin()
	fc.expectInflight(1)
	done()
	c.Drained()
	c.Drained()
	fc.expectInflight(0)
	fc.expect("drained")
	waitClosed(t, c.DrainedSent(), "DrainedSent")
}

func TestReconnectWhenTheSocketAppearsLate(t *testing.T) {
	logs := make(logSink, 64)
	srv := &fakeServer{t: t, path: socketPath(t)}
	c := newClient(t, Options{SocketPath: srv.path, Logf: logs.logf, ReconnectDelay: time.Millisecond, MaxReconnectDelay: 10 * time.Millisecond})
	logs.waitLog(t, "waiting for drain socket") // it tried and failed
	if isClosed(c.Ready()) {
		t.Fatal("ready without a server")
	}
	srv.listen()
	srv.acceptHello()
	waitClosed(t, c.Ready(), "Ready once the socket appeared")
}

func TestReconnectKeepsState(t *testing.T) {
	logs := make(logSink, 64)
	srv := newFakeServer(t)
	c := newClient(t, Options{SocketPath: srv.path, Logf: logs.logf, ReconnectDelay: time.Millisecond})
	fc := srv.acceptHello()
	waitClosed(t, c.Ready(), "Ready")

	done := c.Begin()
	fc.expectInflight(1)
	fc.conn.Close() // connection lost

	fc = srv.acceptHello()
	fc.expectInflight(1) // the new connection learns what is in flight
	fc.drain(time.Minute)
	waitClosed(t, c.Draining(), "Draining")
	done()
	fc.expectInflight(0)
	fc.expect("drained")
	fc.conn.Close()

	// Drain state survives: the next connection is told "drained" at once.
	fc = srv.acceptHello()
	fc.expect("drained")
	if c.IntakeContext().Err() == nil {
		t.Fatal("IntakeContext revived by a reconnect")
	}
}

func TestServerErrorClosesTheConnection(t *testing.T) {
	logs := make(logSink, 64)
	srv := newFakeServer(t)
	newClient(t, Options{SocketPath: srv.path, Logf: logs.logf, ReconnectDelay: time.Millisecond, MaxReconnectDelay: time.Millisecond})
	fc := srv.acceptHello()
	fc.send(`{"type":"error","message":"protocol 1 is not spoken here"}`)
	logs.waitLog(t, "protocol 1 is not spoken here")
	fc.expectEOF() // the client closed its side
	srv.acceptHello()
}

func TestNoopWithoutSocket(t *testing.T) {
	t.Setenv(SocketEnv, "")
	c := New(Options{})
	if c.Enabled() {
		t.Fatal("client without a socket is enabled")
	}
	waitClosed(t, c.Ready(), "Ready of a disabled client")
	err := c.Track(func(ctx context.Context) error {
		if ctx.Err() != nil {
			t.Error("work context of a disabled client is cancelled")
		}
		if n := c.Inflight(); n != 1 {
			t.Errorf("Inflight() = %d inside Track, want 1", n)
		}
		return errors.New("work error")
	})
	if err == nil || err.Error() != "work error" {
		t.Fatalf("Track returned %v, want the work's error", err)
	}
	c.Drained() // harmless
	if _, ok := c.Deadline(); ok || isClosed(c.Draining()) || c.IntakeContext().Err() != nil {
		t.Fatal("a disabled client is draining")
	}
	c.Close()
	c.Close()
	if c.IntakeContext().Err() == nil || c.WorkContext().Err() == nil {
		t.Fatal("Close left the contexts live")
	}
	if isClosed(c.Draining()) {
		t.Fatal("Close closed Draining")
	}
}

func TestSocketFromEnvironment(t *testing.T) {
	srv := newFakeServer(t)
	t.Setenv(SocketEnv, srv.path)
	c := newClient(t, Options{})
	srv.acceptHello()
	waitClosed(t, c.Ready(), "Ready")
}

func TestCloseFlushesAndDisconnects(t *testing.T) {
	srv := newFakeServer(t)
	c := New(Options{SocketPath: srv.path})
	fc := srv.acceptHello()
	waitClosed(t, c.Ready(), "Ready")
	c.Begin()
	c.Close()
	fc.expectInflight(1)
	fc.expectEOF()
	if c.IntakeContext().Err() == nil || c.WorkContext().Err() == nil {
		t.Fatal("Close left the contexts live")
	}
}

func TestDrainDeadlineParsing(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	ms := int64(1500)
	if got, ok := (message{RemainingMs: &ms, Deadline: "2000-01-01T00:00:00.000Z"}).drainDeadline(now); !ok || !got.Equal(now.Add(1500*time.Millisecond)) {
		t.Errorf("remainingMs: got %v, %v", got, ok)
	}
	want := time.Date(2025, 1, 2, 3, 4, 35, 250e6, time.UTC)
	if got, ok := (message{Deadline: "2025-01-02T03:04:35.250Z"}).drainDeadline(now); !ok || !got.Equal(want) {
		t.Errorf("deadline: got %v, %v; want %v", got, ok, want)
	}
	if _, ok := (message{}).drainDeadline(now); ok {
		t.Error("a drain without a deadline has one")
	}
}
