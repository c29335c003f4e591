package drainguard

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"time"
)

// writeTimeout bounds one write to drainguard; flushTimeout bounds the
// flush on Close.
const (
	writeTimeout = 5 * time.Second
	flushTimeout = time.Second
)

// session is one connection to drainguard. Its fields other than conn are
// guarded by Client.mu.
type session struct {
	conn          net.Conn
	welcomed      bool
	drainedQueued bool
	queue         []message
	wake          chan struct{} // capacity 1: "the queue has something"
}

// run dials, serves the connection until it is lost, and dials again, until
// Close. The pause between attempts starts at minDelay and doubles up to
// maxDelay; a welcome resets it, an error message from drainguard sets it to
// maxDelay.
func (c *Client) run() {
	var dialer net.Dialer
	delay := c.minDelay
	lastErr := ""
	for {
		conn, err := dialer.DialContext(c.loopCtx, "unix", c.path)
		if err == nil {
			lastErr = ""
			welcomed, rejected := c.serve(conn)
			if c.loopCtx.Err() != nil {
				return
			}
			switch {
			case rejected:
				delay = c.maxDelay
			case welcomed:
				delay = c.minDelay
			}
			c.logf("drainguard: connection to %s lost, reconnecting", c.path)
		} else {
			if c.loopCtx.Err() != nil {
				return
			}
			if err.Error() != lastErr { // say it once, not on every retry
				lastErr = err.Error()
				c.logf("drainguard: waiting for drain socket %s: %v", c.path, err)
			}
		}
		if !c.pause(delay) {
			return
		}
		if delay *= 2; delay > c.maxDelay {
			delay = c.maxDelay
		}
	}
}

// pause waits for d, or returns false when the client is closed first.
func (c *Client) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.loopCtx.Done():
		return false
	}
}

// serve says hello on conn and handles what drainguard sends until the
// connection ends. welcomed: drainguard answered hello; rejected: it sent an
// error message.
func (c *Client) serve(conn net.Conn) (welcomed, rejected bool) {
	s := &session{
		conn:  conn,
		queue: []message{helloMsg(c.name, os.Getpid())},
		wake:  make(chan struct{}, 1),
	}
	s.wake <- struct{}{}
	c.mu.Lock()
	c.sess = s
	c.mu.Unlock()

	readerDone, writerDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop(s, readerDone)
	}()
	defer func() {
		c.mu.Lock()
		c.sess = nil
		c.mu.Unlock()
		close(readerDone)
		conn.Close()
		<-writerDone
	}()

	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		var m inbound
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			var typeErr *json.UnmarshalTypeError
			if !errors.As(err, &typeErr) { // a field of an odd type is ignored, like an unknown one
				c.logf("drainguard: ignoring a line that is not JSON: %v", err)
				continue
			}
		}
		switch m.Type {
		case "welcome":
			welcomed = true
			c.welcome(s, m)
		case "drain":
			c.startDrain(m.message())
		case "error":
			c.logf("drainguard: drainguard reported an error and closes the connection: %s", m.Message)
			return welcomed, true
		}
	}
	if err := sc.Err(); err != nil && c.loopCtx.Err() == nil {
		c.logf("drainguard: reading from %s: %v", c.path, err)
	}
	return welcomed, false
}

// welcome marks s as ready for messages and brings drainguard up to date:
// the work in flight, and "drained" if that is already true.
func (c *Client) welcome(s *session, m inbound) {
	if m.Protocol != ProtocolVersion {
		c.logf("drainguard: welcomed with protocol %d, speaking %d", m.Protocol, ProtocolVersion)
	}
	c.mu.Lock()
	s.welcomed = true
	if c.inflight != 0 {
		c.sendLocked(inflightMsg(c.inflight))
	}
	c.sendDrainedLocked()
	c.mu.Unlock()
	c.readyOnce.Do(func() { close(c.ready) })
}

// sendLocked queues m for the live, welcomed connection, if any. An inflight
// count not yet written is replaced by the newer one.
func (c *Client) sendLocked(m message) {
	s := c.sess
	if s == nil || !s.welcomed {
		return
	}
	if n := len(s.queue); n > 0 && m.Type == "inflight" && s.queue[n-1].Type == "inflight" {
		s.queue[n-1] = m
	} else {
		s.queue = append(s.queue, m)
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// writeLoop writes what is queued for s until the reader ends, a write
// fails, or the client is closed (then it flushes and closes the connection).
func (c *Client) writeLoop(s *session, readerDone <-chan struct{}) {
	for {
		closing := false
		select {
		case <-s.wake:
		case <-readerDone:
			return
		case <-c.loopCtx.Done():
			closing = true
		}
		if !c.writeQueue(s, closing, readerDone) || closing {
			s.conn.Close()
			return
		}
	}
}

// writeQueue writes and empties s's queue; false when a write failed.
func (c *Client) writeQueue(s *session, closing bool, readerDone <-chan struct{}) bool {
	timeout := writeTimeout
	if closing {
		timeout = flushTimeout
	}
	c.mu.Lock()
	queue := s.queue
	s.queue = nil
	c.mu.Unlock()
	for _, m := range queue {
		s.conn.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := s.conn.Write(m.encode()); err != nil {
			select {
			case <-readerDone: // the connection is gone already; the reader said why
			default:
				c.logf("drainguard: writing to %s: %v", c.path, err)
			}
			return false
		}
		if m.Type == "drained" {
			c.markDrainedSent()
		}
	}
	return true
}

// inbound is what drainguard sends; other fields are ignored.
type inbound struct {
	Type        string   `json:"type"`
	Protocol    int      `json:"protocol"`
	Deadline    string   `json:"deadline"`
	RemainingMs *float64 `json:"remainingMs"`
	Message     string   `json:"message"`
}

func (m inbound) message() message {
	out := message{Type: m.Type, Deadline: m.Deadline}
	if m.RemainingMs != nil {
		ms := int64(*m.RemainingMs)
		out.RemainingMs = &ms
	}
	return out
}
