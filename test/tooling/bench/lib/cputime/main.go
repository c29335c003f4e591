// cputime runs FILE ARGS... with its input, output and errors on /dev/null and
// prints the CPU time it took, user and system, in microseconds: the rusage
// wait4 returns, which holds the process's threads and the children it
// waited for. bash's `time` prints milliseconds, too coarse for a start whose
// differences are fractions of one. Exits 1, saying so, unless FILE exits 0.
//
//	cputime FILE [ARGS...]   prints "USER_US SYSTEM_US"
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cputime FILE [ARGS...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "cputime: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	us := func(t syscall.Timeval) int64 { return t.Sec*1_000_000 + t.Usec }
	fmt.Printf("%d %d\n", us(ru.Utime), us(ru.Stime))
}
