package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary runs main() itself when asked to, so the tests below can
// start the example as a real process without building it first.
func TestMain(m *testing.M) {
	if os.Getenv("DRAINGUARD_EXAMPLE_MAIN") == "1" {
		os.Args = append([]string{"example"}, strings.Fields(os.Getenv("DRAINGUARD_EXAMPLE_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const waitTimeout = 10 * time.Second

// proc is the example running as a child process; lines is its stdout.
type proc struct {
	t     *testing.T
	cmd   *exec.Cmd
	lines chan string
}

func start(t *testing.T, socket, args string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DRAINGUARD_EXAMPLE_MAIN=1", "DRAINGUARD_EXAMPLE_ARGS="+args, "DRAINGUARD_SOCKET="+socket)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	p := &proc{t: t, cmd: cmd, lines: make(chan string, 1000)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	return p
}

// waitFor reads stdout up to a line starting with prefix and returns the
// lines read, that one included.
func (p *proc) waitFor(prefix string) []string {
	p.t.Helper()
	var seen []string
	timeout := time.After(waitTimeout)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("stdout ended before %q; got %q", prefix, seen)
			}
			seen = append(seen, line)
			if strings.HasPrefix(line, prefix) {
				return seen
			}
		case <-timeout:
			p.t.Fatalf("timed out waiting for %q; got %q", prefix, seen)
		}
	}
}

// stop sends SIGTERM and checks the rest of stdout ends with "exit" and the
// exit code is 0. It returns the rest of stdout.
func (p *proc) stop() []string {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	rest := p.waitFor("exit")
	if line, ok := <-p.lines; ok {
		p.t.Fatalf("output after exit: %q", line)
	}
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("example exited with %v, want 0", err)
	}
	return rest
}

func TestDrainThenSIGTERM(t *testing.T) {
	dir, err := os.MkdirTemp("", "dgx")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	p := start(t, ln.Addr().String(), "-workers 2 -min 10ms -max 100ms")
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(waitTimeout))
	in := bufio.NewScanner(conn)
	if !in.Scan() || !strings.Contains(in.Text(), `"type":"hello"`) {
		t.Fatalf("want hello, got %q (%v)", in.Text(), in.Err())
	}
	conn.Write([]byte(`{"type":"welcome","protocol":1}` + "\n"))
	p.waitFor("ready")
	p.waitFor("reconcile done")
	conn.Write([]byte(`{"type":"drain","deadline":"2099-01-01T00:00:00.000Z","remainingMs":60000}` + "\n"))
	for in.Scan() && !strings.Contains(in.Text(), `"type":"drained"`) {
	}
	if in.Err() != nil {
		t.Fatalf("no drained from the example: %v", in.Err())
	}
	p.waitFor("drain received")
	afterDrain := p.waitFor("drained sent")
	for _, line := range afterDrain {
		if strings.HasPrefix(line, "reconcile interrupted") {
			t.Errorf("a reconcile was interrupted although the deadline was far: %q", afterDrain)
		}
	}
	p.stop()
}

func TestSIGTERMWithoutDrainguard(t *testing.T) {
	p := start(t, "", "-workers 2 -min 1h -max 1h")
	p.waitFor("ready")
	p.waitFor("reconcile start")
	p.waitFor("reconcile start")
	rest := p.stop()
	interrupted := 0
	for _, line := range rest {
		if strings.HasPrefix(line, "reconcile interrupted") {
			interrupted++
		}
	}
	if interrupted != 2 {
		t.Fatalf("want 2 interrupted reconciles, got %q", rest)
	}
}
