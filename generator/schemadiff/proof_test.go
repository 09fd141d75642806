package schemadiff_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/schemadiff"
	"github.com/warrenbus/warren/internal/testenv"
)

// TestDiffAgreesWithTheBroker generates the Go packages of an old and a new
// schema directory (testdata/proof/schemas), builds a program from each,
// and runs them on the real broker both ways round: the old consumer
// against facts the new producer publishes, and the new consumer against
// facts the old producer published. Each fact is a kind of change, and its
// sample payload is one the change lets through on the producer's side.
// Whatever the diff says breaks in a direction must be poisoned there;
// whatever it says does not must be handled.
func TestDiffAgreesWithTheBroker(t *testing.T) {
	url := testenv.VHost(t, "proof")
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to build the generated packages: %v", err)
	}
	schemas := filepath.Join("testdata", "proof", "schemas")
	old, err := schemadiff.Load(context.Background(), filepath.Join(schemas, "old"))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := schemadiff.Load(context.Background(), filepath.Join(schemas, "new"))
	if err != nil {
		t.Fatal(err)
	}
	breaks := map[string]schemadiff.Direction{} // routing key -> what the diff says its changes break
	for _, c := range schemadiff.Compare(old, cur).Changes {
		if c.Fact != "" {
			breaks[c.Fact] |= c.Breaks
		}
	}
	bin := buildProofPrograms(t, schemas)

	tests := []struct {
		name               string
		producer, consumer string
		direction          schemadiff.Direction
		samples            string
		// The verdict spelt out, so that the diff and the broker cannot
		// agree on something nobody checked.
		wantPoisoned []string
	}{
		{"forward: old consumer, new facts", "new", "old", schemadiff.Forward, "new-samples.json", []string{
			"proof.bound.loosened", "proof.closed.extended", "proof.enum.extended", "proof.import.failed",
			"proof.optional.made", "proof.type.widened",
		}},
		{"backward: new consumer, old facts", "old", "new", schemadiff.Backward, "old-samples.json", []string{
			"proof.bound.tightened", "proof.closed.shrunk", "proof.enum.shrunk", "proof.item.retired",
			"proof.required.added", "proof.type.narrowed",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := filepath.Join("testdata", "proof", tt.samples)
			var published map[string]json.RawMessage
			src, err := os.ReadFile(samples)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(src, &published); err != nil {
				t.Fatal(err)
			}
			runProof(t, filepath.Join(bin, tt.producer), url, "publish", samples)
			out := runProof(t, filepath.Join(bin, tt.consumer), url, "consume", strconv.Itoa(len(published)))
			var handled []string
			if err := json.Unmarshal(out, &handled); err != nil {
				t.Fatalf("consumer output %q: %v", out, err)
			}
			var poisoned, predicted []string
			for key := range published {
				if !slices.Contains(handled, key) {
					poisoned = append(poisoned, key)
				}
				if breaks[key]&tt.direction != 0 {
					predicted = append(predicted, key)
				}
			}
			slices.Sort(poisoned)
			slices.Sort(predicted)
			if diff := cmp.Diff(predicted, poisoned); diff != "" {
				t.Errorf("the diff predicted these poisoned (-), the broker poisoned these (+):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantPoisoned, poisoned); diff != "" {
				t.Errorf("poisoned (-want +got):\n%s", diff)
			}
		})
	}
}

// runProof runs one of the built programs and returns its standard output.
func runProof(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), args[1], err, stderr.String())
	}
	return out
}

// buildProofPrograms generates the package of each schema directory into
// one temporary module that uses this checkout of warren, writes a program
// beside each, and builds both with one go build. It returns the directory
// of the binaries "old" and "new".
func buildProofPrograms(t *testing.T, schemas string) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	write := func(name string, data []byte) {
		t.Helper()
		p := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := "1.26"
	for _, line := range strings.Split(string(gomod), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			goVersion = strings.TrimSpace(v)
		}
	}
	write("go.mod", []byte("module proofmod\n\ngo "+goVersion+"\n\nrequire github.com/warrenbus/warren v0.0.0\n\nreplace github.com/warrenbus/warren => "+root+"\n"))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", sum)
	for _, side := range []string{"old", "new"} {
		dir := filepath.Join(schemas, side)
		files, err := generator.Generate(context.Background(), dir, generator.Options{})
		if err != nil {
			t.Fatalf("generate %s: %v", dir, err)
		}
		for name, src := range files {
			write(filepath.Join(side, "proof", name), src)
		}
		d, err := schemadiff.Load(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		var main bytes.Buffer
		if err := proofMain.Execute(&main, map[string]any{"Side": side, "Facts": d.Schemas.Facts}); err != nil {
			t.Fatal(err)
		}
		write(filepath.Join(side, "main.go"), main.Bytes())
	}
	bin := t.TempDir()
	cmd := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./old", "./new")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// proofMain is the program built from each generated package: "publish
// URL SAMPLES" publishes each sample payload as its fact through the
// runtime's publisher (which validates it against the producer's schema);
// "consume URL N" runs the generated consumer until N deliveries are
// settled and prints the routing keys it handled.
var proofMain = template.Must(template.New("main").Parse(`package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/warrenbus/warren/runtime"
	proof "proofmod/{{.Side}}/proof"
)

type handler struct {
	mu      sync.Mutex
	handled []string
}

func (h *handler) got(d runtime.Delivery) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handled = append(h.handled, d.RoutingKey)
	return nil
}
{{range .Facts}}
func (h *handler) Handle{{.Title}}(_ context.Context, d runtime.Delivery, _ proof.{{.Title}}) error { return h.got(d) }
{{end}}
var facts = map[string]runtime.Fact{ {{- range .Facts}}
	"{{.RoutingKey}}": proof.Fact{{.Title}},{{end}}
}

func main() {
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(url, mode, arg string) error {
	ctx := context.Background()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &proof.Topology})
	if err != nil {
		return err
	}
	defer conn.Close()
	switch mode {
	case "publish":
		src, err := os.ReadFile(arg)
		if err != nil {
			return err
		}
		var samples map[string]json.RawMessage
		if err := json.Unmarshal(src, &samples); err != nil {
			return err
		}
		p, err := runtime.NewPublisher(conn, proof.Topology.Exchanges[0].Name)
		if err != nil {
			return err
		}
		defer p.Close()
		for key, payload := range samples {
			f, ok := facts[key]
			if !ok {
				return fmt.Errorf("no fact %s", key)
			}
			if _, err := p.Publish(ctx, f, payload); err != nil {
				return fmt.Errorf("publish %s: %w", key, err)
			}
		}
		return nil
	case "consume":
		n, err := strconv.Atoi(arg)
		if err != nil {
			return err
		}
		h := &handler{}
		c, err := proof.NewProofReaderConsumer(conn, h)
		if err != nil {
			return err
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.Run(runCtx) }()
		for {
			counts := conn.Counts("proof-reader")
			if counts.Get(runtime.Acked)+counts.Get(runtime.Poisoned) >= uint64(n) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			return err
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		slices.Sort(h.handled)
		return json.NewEncoder(os.Stdout).Encode(h.handled)
	}
	return fmt.Errorf("mode %q: expected publish or consume", mode)
}
`))
