package schemadiff_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// and runs them on the real broker both ways round: the old consumers
// against facts the new producer publishes, and the new consumers against
// facts the old producer published. Each fact is a kind of change, and its
// sample payload is one the change lets through on the producer's side;
// proof-reader binds every fact, proof-narrowed's bindings stop matching
// most of them, proof-widened's start to. Whatever the diff says breaks in
// a direction, for a fact or for a consumer of it, must be poisoned there;
// whatever it says does not must be handled.
func TestDiffAgreesWithTheBroker(t *testing.T) {
	// A vhost per direction: bindings one side declares stay on the broker.
	urls := map[schemadiff.Direction]string{schemadiff.Forward: testenv.VHost(t, "proof-fwd"), schemadiff.Backward: testenv.VHost(t, "proof-bwd")}
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to build the generated packages: %v", err)
	}
	schemas := filepath.Join("testdata", "proof", "schemas")
	dirs := map[string]*schemadiff.Dir{}
	for _, side := range []string{"old", "new"} {
		d, err := schemadiff.Load(context.Background(), filepath.Join(schemas, side))
		if err != nil {
			t.Fatal(err)
		}
		dirs[side] = d
	}
	// What the diff says each change breaks: for a fact, whoever receives
	// it; for a consumer and a fact, that consumer.
	breaks := map[string]schemadiff.Direction{}
	for _, c := range schemadiff.Compare(dirs["old"], dirs["new"]).Changes {
		if c.Fact != "" {
			breaks[c.Consumer+"/"+c.Fact] |= c.Breaks
		}
	}
	bin := buildProofPrograms(t, schemas)

	tests := []struct {
		name               string
		producer, consumer string
		direction          schemadiff.Direction
		samples            string
		// What each consumer handled, spelt out, so that the diff and the
		// broker cannot agree on something nobody checked.
		wantHandled map[string][]string
	}{
		{"forward: old consumers, new facts", "new", "old", schemadiff.Forward, "new-samples.json", map[string][]string{
			"proof-reader": {"proof.allof.tightened", "proof.bound.tightened", "proof.closed.shrunk", "proof.enum.shrunk",
				"proof.integer.rewritten", "proof.open.extended", "proof.open.shrunk", "proof.required.added", "proof.type.narrowed"},
			"proof-narrowed": {"proof.closed.shrunk"},
			"proof-widened":  {"proof.closed.shrunk"},
		}},
		{"backward: new consumers, old facts", "old", "new", schemadiff.Backward, "old-samples.json", map[string][]string{
			"proof-reader": {"proof.bound.loosened", "proof.closed.extended", "proof.enum.extended", "proof.integer.rewritten",
				"proof.open.extended", "proof.open.shrunk", "proof.optional.made", "proof.type.widened"},
			"proof-narrowed": {"proof.closed.extended"},
			"proof-widened":  {"proof.closed.extended"},
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
			// The producer declares its topology before it publishes: what
			// each queue receives is what the producer's bindings route.
			routed := map[string][]string{}
			expect := map[string]int{}
			for _, c := range dirs[tt.producer].Consumers {
				for _, key := range c.Facts {
					if _, ok := published[key]; ok {
						routed[c.Name] = append(routed[c.Name], key)
					}
				}
				expect[c.Name] = len(routed[c.Name])
			}
			spec, _ := json.Marshal(expect)
			url := urls[tt.direction]
			runProof(t, filepath.Join(bin, tt.producer), url, "publish", samples)
			out := runProof(t, filepath.Join(bin, tt.consumer), url, "consume", string(spec))
			var handled map[string][]string
			if err := json.Unmarshal(out, &handled); err != nil {
				t.Fatalf("consumer output %q: %v", out, err)
			}
			for consumer, keys := range routed {
				var predicted []string
				for _, key := range keys {
					if (breaks["/"+key]|breaks[consumer+"/"+key])&tt.direction == 0 {
						predicted = append(predicted, key)
					}
				}
				slices.Sort(predicted)
				got := handled[consumer]
				if diff := cmp.Diff(predicted, got); diff != "" {
					t.Errorf("%s: the diff predicted these handled (-), the broker handled these (+):\n%s", consumer, diff)
				}
				if diff := cmp.Diff(tt.wantHandled[consumer], got); diff != "" {
					t.Errorf("%s: handled (-want +got):\n%s", consumer, diff)
				}
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
		type consumer struct{ Name, GoName string }
		var consumers []consumer
		for _, c := range d.Consumers {
			goName := ""
			for _, w := range strings.Split(c.Name, "-") {
				goName += strings.ToUpper(w[:1]) + w[1:]
			}
			consumers = append(consumers, consumer{c.Name, goName})
		}
		var main bytes.Buffer
		if err := proofMain.Execute(&main, map[string]any{"Side": side, "Facts": d.Schemas.Facts, "Consumers": consumers}); err != nil {
			t.Fatal(err)
		}
		write(filepath.Join(side, "main.go"), main.Bytes())
	}
	bin := t.TempDir()
	// The module's dependencies are warren's, fetched through the
	// environment's GOPROXY when the module cache lacks them; -mod=mod
	// goes with the environment's GOFLAGS rather than replacing them,
	// GOWORK=off keeps any workspace out, GOTOOLCHAIN=local keeps the
	// toolchain that runs the test.
	goflags, err := exec.Command("go", "env", "GOFLAGS").Output()
	if err != nil {
		t.Fatalf("go env GOFLAGS: %v", err)
	}
	cmd := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./old", "./new")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS="+strings.TrimSpace(strings.TrimSpace(string(goflags))+" -mod=mod"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// proofMain is the program built from each generated package: "publish
// URL SAMPLES" publishes each sample payload as its fact through the
// runtime's publisher (which validates it against the producer's schema);
// "consume URL COUNTS" runs every generated consumer until each has settled
// as many deliveries as COUNTS (a JSON object) says, and prints the routing
// keys each handled.
var proofMain = template.Must(template.New("main").Parse(`package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/warrenbus/warren/runtime"
	proof "proofmod/{{.Side}}/proof"
)

// handler implements every generated handler interface: each has a
// method per fact its consumer's bindings match.
type handler struct {
	mu      sync.Mutex
	handled map[string][]string // consumer -> routing keys
}

func (h *handler) got(d runtime.Delivery) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handled[d.Consumer] = append(h.handled[d.Consumer], d.RoutingKey)
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
		var want map[string]uint64
		if err := json.Unmarshal([]byte(arg), &want); err != nil {
			return err
		}
		h := &handler{handled: map[string][]string{}}
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, {{len .Consumers}})
		for _, build := range []func() (*runtime.Consumer, error){ {{- range .Consumers}}
			func() (*runtime.Consumer, error) { return proof.New{{.GoName}}Consumer(conn, h) },{{end}}
		} {
			c, err := build()
			if err != nil {
				return err
			}
			go func() { done <- c.Run(runCtx) }()
		}
		for name, n := range want {
			for {
				counts := conn.Counts(name)
				if counts.Get(runtime.Acked)+counts.Get(runtime.Poisoned) >= n {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		cancel()
		for range {{len .Consumers}} {
			if err := <-done; err != nil {
				return err
			}
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, keys := range h.handled {
			slices.Sort(keys)
		}
		return json.NewEncoder(os.Stdout).Encode(h.handled)
	}
	return fmt.Errorf("mode %q: expected publish or consume", mode)
}
`))
