// A small systemd-logind for the tests of the kubelet's graceful node
// shutdown: it owns org.freedesktop.login1 on the bus it is given (a private
// system bus), reports InhibitDelayMaxUSec, hands out delay inhibitor locks
// (a pipe's end, as logind does) and, at SIGUSR1, emits
// PrepareForShutdown(true), which makes the real kubelet run its real shutdown.
// It says on stdout what happens, one line each, for the test to wait on:
// "ready", "inhibit WHO WHAT MODE", "shutdown", "released WHO".
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
)

const (
	service = "org.freedesktop.login1"
	path    = dbus.ObjectPath("/org/freedesktop/login1")
	iface   = "org.freedesktop.login1.Manager"
)

type manager struct {
	// The read ends of the locks handed out: EOF on one is its holder's release.
	locks chan lock
}

type lock struct {
	who string
	r   *os.File
}

// Inhibit is logind's: it returns the write end of a pipe, whose closing releases the lock.
func (m *manager) Inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	fmt.Printf("inhibit %s %s %s\n", who, what, mode)
	m.locks <- lock{who, r}
	// godbus sends the descriptor; ours is closed once sent (dup'ed by the kernel into the message).
	fd, err := syscall.Dup(int(w.Fd()))
	w.Close()
	if err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	return dbus.UnixFD(fd), nil
}

func main() {
	address := flag.String("address", "", "the bus address (unix:path=…)")
	delay := flag.Duration("inhibit-delay-max", 30*time.Second, "InhibitDelayMaxUSec")
	flag.Parse()
	conn, err := dbus.Connect(*address)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
	m := &manager{locks: make(chan lock, 16)}
	if err := conn.Export(m, path, iface); err != nil {
		fmt.Fprintln(os.Stderr, "export:", err)
		os.Exit(1)
	}
	props := prop.Map{iface: {
		"InhibitDelayMaxUSec": {Value: uint64(delay.Microseconds()), Writable: false, Emit: prop.EmitFalse},
	}}
	if _, err := prop.Export(conn, path, props); err != nil {
		fmt.Fprintln(os.Stderr, "properties:", err)
		os.Exit(1)
	}
	reply, err := conn.RequestName(service, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		fmt.Fprintln(os.Stderr, "request name:", reply, err)
		os.Exit(1)
	}
	go func() {
		for l := range m.locks {
			go func(l lock) {
				buf := make([]byte, 1)
				l.r.Read(buf)
				fmt.Printf("released %s\n", l.who)
			}(l)
		}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGTERM)
	fmt.Println("ready")
	for s := range sig {
		if s == syscall.SIGTERM {
			return
		}
		if err := conn.Emit(path, iface+".PrepareForShutdown", true); err != nil {
			fmt.Fprintln(os.Stderr, "emit:", err)
			continue
		}
		fmt.Println("shutdown")
	}
}
