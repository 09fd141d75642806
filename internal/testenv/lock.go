package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The vhosts of a broker are created and deleted one command at a time,
// machine-wide: go test runs the packages of a run as test binaries side
// by side, and several runs may share the machine. Every rabbitmqctl
// command starts an Erlang node that takes one of the CLI tools' few
// distribution ports, and a vhost command the broker is slow to finish
// holds it meanwhile: commands of many binaries at once ran out of them.
// (When the broker stopped answering altogether, the cause was its file
// handle cache, full with the vhosts alive: see scripts/rabbitmq-files.)
// A lock file per broker address, held with flock, serializes these
// commands and nothing else: the broker's other rabbitmqctl commands, and
// other brokers' (the RabbitMQ 4 node, the cluster), do not wait for it.

// vhostLockWait bounds how long a vhost command waits for the lock: each
// command of its holder ends within ctlTimeout, so only a holder stopped
// while it holds the lock (Ctrl-Z) makes a test wait this long, and the
// test then fails naming the lock and its holder rather than hang.
const vhostLockWait = 5 * time.Minute

// vhostLockPath is the lock file of the broker at addr (host:port).
func vhostLockPath(addr string) string {
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, addr)
	return filepath.Join(os.TempDir(), "warren-vhost-admin-"+safe+".lock")
}

// lockVHosts holds the vhost lock of the broker at addr, waiting while
// another process, or another test of this one, holds it, and returns
// the function that releases it.
func lockVHosts(addr string) (unlock func(), err error) {
	path := vhostLockPath(addr)
	deadline := time.Now().Add(vhostLockWait)
	// Polled rather than waited for in flock: a wait in flock cannot be
	// given up, and ties up a thread per waiting test.
	pause := 5 * time.Millisecond
	for {
		f, err := tryLock(path)
		if err != nil {
			return nil, fmt.Errorf("the vhost lock of the broker at %s: %w", addr, err)
		}
		if f != nil {
			// Whoever waits next can say who holds it.
			if err := f.Truncate(0); err == nil {
				_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
			}
			return func() { _ = f.Close() }, nil // closing releases the lock
		}
		if time.Now().After(deadline) {
			holder, _ := os.ReadFile(path)
			return nil, fmt.Errorf("the vhost lock of the broker at %s (%s) is still held after %v, by process %s: "+
				"another test process creating or deleting vhosts there is stopped or hung", addr, path, vhostLockWait, strings.TrimSpace(string(holder)))
		}
		time.Sleep(pause)
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// tryLock takes the exclusive flock of the file at path, created if
// needed, on an open file description of its own: another one, in this
// process or another, holding it makes it return nil and no error. The
// lock lasts until the returned file is closed, or its process ends. The
// descriptor is closed on exec (os.OpenFile's default), so that a command
// run under the lock does not inherit it and hold it past its holder.
func tryLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err == nil {
		return f, nil
	}
	_ = f.Close()
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, nil
	}
	return nil, fmt.Errorf("flock %s: %w", path, err)
}

// killTree kills the process pid and every process it started, however
// deep, with SIGKILL. rabbitmqctl run as root is a shell that runs su, and
// su starts the command in a session of its own and, when it is ended,
// ends only that session's shell: the Erlang node of the command lives on
// and keeps its distribution port. The processes are found through /proc
// before any is killed (a killed parent's children are handed to init);
// without /proc, pid alone is killed.
func killTree(pid int) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return syscall.Kill(pid, syscall.SIGKILL)
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	for _, p := range tree {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	return nil
}
