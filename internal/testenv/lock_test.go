package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// lockChildEnv makes this test binary, run again by
// TestVHostLockExcludesOtherProcesses, the process that holds the lock of
// the address it names.
const lockChildEnv = "WARREN_TESTENV_LOCK_CHILD"

// The vhost lock of a broker address is held by one process at a time,
// and by one holder within a process; a holder that dies releases it.
func TestVHostLockExcludesOtherProcesses(t *testing.T) {
	if addr := os.Getenv(lockChildEnv); addr != "" {
		unlock, err := lockVHosts(addr)
		if err != nil {
			t.Fatal(err)
		}
		// Deferred, it keeps the lock's file reachable: the file's
		// finalizer would close it, and release the lock.
		defer unlock()
		fmt.Println("locked")
		select {} // until killed
	}
	// An address of its own, so that the test waits for no broker's
	// vhost commands, nor they for it.
	addr := Name("lock-test") + ":1"
	path := vhostLockPath(addr)
	t.Cleanup(func() { _ = os.Remove(path) })

	cmd := exec.Command(os.Args[0], "-test.run", "^TestVHostLockExcludesOtherProcesses$")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+addr)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("the child printed %q (%v); want locked", line, err)
	}
	if f, err := tryLock(path); f != nil || err != nil {
		t.Fatalf("took the lock the child holds (%v)", err)
	}
	if holder, err := os.ReadFile(path); err != nil || strings.TrimSpace(string(holder)) != strconv.Itoa(cmd.Process.Pid) {
		t.Errorf("the lock file says %q (%v), want the holder's pid %d", holder, err, cmd.Process.Pid)
	}

	// Killed, the child holds nothing: no unlock ran.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waited = true
	_ = cmd.Wait()
	mine, err := tryLock(path)
	if err != nil || mine == nil {
		t.Fatalf("the lock after its holder died: %v; want it free", err)
	}
	// Another holder in the same process, on a file description of its
	// own, as a parallel test takes it: held already.
	if f, err := tryLock(path); f != nil || err != nil {
		t.Fatalf("took the lock this process holds (%v)", err)
	}
	_ = mine.Close()
	unlock, err := lockVHosts(addr)
	if err != nil {
		t.Fatalf("the lock once released: %v", err)
	}
	unlock()
}

// A rabbitmqctl command that does not finish is killed, with every
// process it started: here a shell whose child left its session, as su's
// does with the command it runs as root. The error says the command was
// killed and why.
func TestCtlKillsAHungCommandAndWhatItStarted(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("the processes a command started are found through /proc: %v", err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The child writes its pid once it runs, and the shell waits for it:
	// neither ends of itself.
	hung := []string{"sh", "-c", `setsid sleep 100000 & echo $! > "$0.new" && mv "$0.new" "$0"; wait`}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan error, 1)
	go func() {
		_, err := runCtlCtx(ctx, hung, nil, pidFile)
		done <- err
	}()
	var pid int
	Eventually(t, "the hung command's child to start", func() bool {
		b, err := os.ReadFile(pidFile)
		if err == nil {
			pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return err == nil
	})
	// Should it survive the kill, the test does not leave it behind.
	t.Cleanup(func() {
		// Only while the pid is still the sleep's, not a later process's.
		if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(cmdline), "100000") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	stopped := errors.New("no answer")
	cancel(stopped)
	err := <-done
	if !errors.Is(err, stopped) || !strings.Contains(err.Error(), "killed (no answer)") {
		t.Fatalf("the hung command: %v, want it killed, saying why", err)
	}
	// Killed, it is gone, or a zombie while nobody has reaped it (the
	// session leader's parent is init, or the container's first process).
	Eventually(t, fmt.Sprintf("the hung command's child %d to be killed", pid), func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return errors.Is(err, os.ErrNotExist)
		}
		i := strings.LastIndexByte(string(stat), ')')
		return i >= 0 && strings.HasPrefix(strings.TrimSpace(string(stat[i+1:])), "Z")
	})
}
