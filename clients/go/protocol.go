package drainguard

import (
	"encoding/json"
	"time"
)

// ProtocolVersion is the version of the drain protocol this package speaks.
const ProtocolVersion = 1

// maxLine is the longest line either side may send (spec: 64 KiB).
const maxLine = 64 * 1024

// message is the union of every message of the drain protocol, version 1.
// Fields that a type does not use are omitted when encoding.
type message struct {
	Type        string `json:"type"`
	Protocol    int    `json:"protocol,omitempty"`
	Name        string `json:"name,omitempty"`
	PID         int    `json:"pid,omitempty"`
	Count       *int   `json:"count,omitempty"`
	Deadline    string `json:"deadline,omitempty"`
	RemainingMs *int64 `json:"remainingMs,omitempty"`
	Message     string `json:"message,omitempty"`
}

func helloMsg(name string, pid int) message {
	return message{Type: "hello", Protocol: ProtocolVersion, Name: name, PID: pid}
}

func inflightMsg(n int) message { return message{Type: "inflight", Count: &n} }

func drainedMsg() message { return message{Type: "drained"} }

// encode renders m as one line of JSON, newline included.
func (m message) encode() []byte {
	b, err := json.Marshal(m)
	if err != nil { // cannot happen: only strings and numbers
		panic(err)
	}
	return append(b, '\n')
}

// drainDeadline works out when a drain message says the deadline is.
// remainingMs is preferred (it does not depend on the two clocks agreeing);
// the absolute deadline is the fallback. ok is false when neither is usable.
func (m message) drainDeadline(now time.Time) (deadline time.Time, ok bool) {
	if m.RemainingMs != nil {
		return now.Add(time.Duration(*m.RemainingMs) * time.Millisecond), true
	}
	if t, err := time.Parse(time.RFC3339Nano, m.Deadline); err == nil {
		return t, true
	}
	return time.Time{}, false
}
