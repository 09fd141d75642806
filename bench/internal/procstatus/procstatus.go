// Package procstatus reads the memory figures of the running process from
// /proc/self/status, for the memory benchmark's consumers. It imports the
// standard library alone, so that the raw amqp091-go consumer carries
// nothing of warren's.
package procstatus

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// KB returns a kB figure of /proc/self/status: "VmRSS:", "VmHWM:".
func KB(field string) (int, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field); ok {
			v, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				return 0, fmt.Errorf("/proc/self/status %s %q: %w", field, rest, err)
			}
			return v, nil
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

// Report prints the line the memory benchmark reads: "MEMORY peak end
// start anon file", in kB: the peak and end resident sets read now, start
// as the caller read it before its first delivery, and the end resident
// set split into anonymous memory (heap, stacks) and mapped files (the
// program's own code and data, the larger the more it links).
func Report(start int) error {
	var v [4]int
	for i, field := range []string{"VmHWM:", "VmRSS:", "RssAnon:", "RssFile:"} {
		kb, err := KB(field)
		if err != nil {
			return err
		}
		v[i] = kb
	}
	_, err := fmt.Printf("MEMORY %d %d %d %d %d\n", v[0], v[1], start, v[2], v[3])
	return err
}
