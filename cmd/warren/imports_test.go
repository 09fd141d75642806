package main

import (
	"archive/zip"
	"bytes"
	"context"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/warrenbus/warren/cmd/warren/internal/gomod"
	"github.com/warrenbus/warren/internal/testenv"
)

// The producer's schema directory: two facts on its own exchanges.
var producerSchemas = map[string]string{
	"events/warren.json": `{"package": "catalogueevents", "exchanges": {"events": "catalogue.events", "retry": "catalogue.retry", "dead": "catalogue.dead"}}`,
	"events/item/created.json": `{"x-routing-key": "catalogue.item.created", "title": "ItemCreated", "type": "object", "required": ["sku", "name"],
  "properties": {"sku": {"type": "string", "minLength": 3}, "name": {"type": "string"}}}`,
	"events/item/deleted.json": `{"x-routing-key": "catalogue.item.deleted", "title": "ItemDeleted", "type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}}`,
}

const producerPublish = `package main

import (
	"context"
	"fmt"
	"os"

	"example.com/catalogue/catalogueevents"
	"github.com/warrenbus/warren/runtime"
)

func main() {
	ctx := context.Background()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{os.Getenv("WARREN_AMQP_URL")}, Topology: &catalogueevents.Topology})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	pub, err := catalogueevents.NewPublisher(conn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, sku := range []string{"sku-1", "sku-2", "sku-3"} {
		if _, err := pub.PublishItemCreated(ctx, catalogueevents.ItemCreated{Sku: sku, Name: "item " + sku}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Printf("published 3, producer queues %d\n", len(catalogueevents.Topology.Queues))
}
`

// consumerMain handles 3 facts and stops; TYPES is the package the fact
// type comes from, IMPORT its import line.
const consumerMain = `package main

import (
	"context"
	"fmt"
	"os"

	IMPORT
	"example.com/search/searchevents"
	"github.com/warrenbus/warren/runtime"
)

type indexer struct{ got chan string }

func (ix indexer) HandleItemCreated(ctx context.Context, d runtime.Delivery, f TYPES.ItemCreated) error {
	ix.got <- f.Sku + " " + f.Name
	return nil
}

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{os.Getenv("WARREN_AMQP_URL")}, Topology: &searchevents.Topology})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	ix := indexer{got: make(chan string)}
	c, err := searchevents.NewSearchIndexerConsumer(conn, ix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	fmt.Println("ready")
	for range 3 {
		fmt.Println("handled", <-ix.got)
	}
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

// twoModules is a producer module and a consumer module that requires it
// through a replace directive, both outside the repository, with warren
// replaced by this checkout.
type twoModules struct {
	t                  *testing.T
	root               string // the checkout
	producer, consumer string
}

func newTwoModules(t *testing.T, goPackage string) *twoModules {
	if testing.Short() {
		t.Skip("builds two modules from scratch")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	goEnv(t)
	tmp := t.TempDir()
	m := &twoModules{t: t, root: root, producer: filepath.Join(tmp, "producer"), consumer: filepath.Join(tmp, "search")}
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := goDirective(t, root)
	files := map[string]string{
		"go.mod":              "module example.com/catalogue\n\ngo " + goVersion + "\n\nrequire github.com/warrenbus/warren v0.0.0\n\nreplace github.com/warrenbus/warren => " + root + "\n",
		"go.sum":              string(sums),
		"cmd/publish/main.go": producerPublish,
	}
	for k, v := range producerSchemas {
		files[k] = v
	}
	writeFiles(t, m.producer, files)

	imp := `{"module": "example.com/catalogue", "dir": "events"}`
	main := strings.NewReplacer("IMPORT", "", "TYPES", "searchevents").Replace(consumerMain)
	if goPackage != "" {
		imp = `{"module": "example.com/catalogue", "dir": "events", "goPackage": "` + goPackage + `"}`
		main = strings.NewReplacer("IMPORT", `"`+goPackage+`"`, "TYPES", "catalogueevents").Replace(consumerMain)
	}
	writeFiles(t, m.consumer, map[string]string{
		"go.mod": "module example.com/search\n\ngo " + goVersion + "\n\n" +
			"require (\n\tgithub.com/warrenbus/warren v0.0.0\n\texample.com/catalogue v1.3.0\n)\n\n" +
			"replace github.com/warrenbus/warren => " + root + "\n\nreplace example.com/catalogue => ../producer\n",
		"go.sum":             string(sums),
		"events/warren.json": `{"package": "searchevents", "imports": [` + imp + `], "consumers": {"search-indexer": {"bindings": ["catalogue.item.created"], "backoff": ["20ms"]}}}`,
		"main.go":            main,
	})
	return m
}

// goEnv sets the go command's environment for the modules a test lays
// out, in this process (the module resolver) and in the ones the test
// starts: -mod=mod (added to the environment's GOFLAGS) lets it complete
// the go.mod files the test writes, GOWORK=off keeps it out of any
// workspace, GOTOOLCHAIN=local keeps the toolchain that runs the test.
// GOPROXY, GONOSUMDB and the like stay as the environment has them: a
// module the module cache does not hold is fetched as it would be for a
// user, so the tests do not depend on what earlier builds downloaded.
//
// The one exception is warren itself, which the test's modules replace by
// this checkout: go get looks up whether a path below it (cmd/warren) is a
// module of its own, and a proxy may answer for a module it does not serve
// with an error (a mirror that serves only the modules it allows answers
// 403) rather than the 404 or 410 the go command takes as "no such
// module". GONOPROXY takes warren's paths away from the proxy, and
// GOVCS=...:off forbids fetching them directly, which the go command takes
// as no such module: warren is never looked up anywhere.
func goEnv(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOFLAGS", "GONOPROXY", "GOVCS").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	v := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(v) != 3 {
		t.Fatalf("go env GOFLAGS GONOPROXY GOVCS printed %q", out)
	}
	t.Setenv("GOFLAGS", strings.TrimSpace(v[0]+" -mod=mod"))
	t.Setenv("GOWORK", "off")
	t.Setenv("GOTOOLCHAIN", "local")
	// GOVCS takes the first pattern that matches: warren's goes first.
	t.Setenv("GONOPROXY", commaList(v[1], warrenModule))
	t.Setenv("GOVCS", commaList(warrenModule+":off", v[2]))
}

// warrenModule is the module path of this checkout.
const warrenModule = "github.com/warrenbus/warren"

// commaList joins the non-empty items with commas, as GONOPROXY and GOVCS
// list their patterns.
func commaList(items ...string) string {
	return strings.Join(slices.DeleteFunc(items, func(s string) bool { return s == "" }), ",")
}

func goDirective(t *testing.T, root string) string {
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(goMod)
	if m == nil {
		t.Fatal("no go directive in go.mod")
	}
	return string(m[1])
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func goIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

func (m *twoModules) warren(wantCode int, args ...string) string {
	m.t.Helper()
	code, stdout, stderr := run(m.t, args...)
	if code != wantCode {
		m.t.Fatalf("warren %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, stdout, stderr)
	}
	return stdout + stderr
}

// generateAndBuild generates both packages and builds and vets both
// modules; it returns the consumer's generated files.
func (m *twoModules) generateAndBuild() map[string]bool {
	m.warren(0, "generate", "--out", filepath.Join(m.producer, "catalogueevents"), filepath.Join(m.producer, "events"))
	goIn(m.t, m.producer, "build", "./...")
	goIn(m.t, m.producer, "vet", "./...")
	out := filepath.Join(m.consumer, "searchevents")
	m.warren(0, "generate", "--out", out, filepath.Join(m.consumer, "events"))
	m.warren(0, "generate", "--check", "--out", out, filepath.Join(m.consumer, "events"))
	goIn(m.t, m.consumer, "build", "./...")
	goIn(m.t, m.consumer, "vet", "./...")
	entries, err := os.ReadDir(out)
	if err != nil {
		m.t.Fatal(err)
	}
	files := map[string]bool{}
	for _, e := range entries {
		files[e.Name()] = true
	}
	return files
}

// onTheBroker runs the consumer, then the producer's publisher, each
// declaring its own topology in a vhost of the test's, and checks that the
// consumer handled every fact and that the broker holds the consumer's
// queues only.
func (m *twoModules) onTheBroker() {
	t := m.t
	vhostURL := testenv.VHost(t, "warren-imports")
	bin := t.TempDir()
	goIn(t, m.consumer, "build", "-o", filepath.Join(bin, "consumer"), ".")
	goIn(t, m.producer, "build", "-o", filepath.Join(bin, "publish"), "./cmd/publish")

	var out syncBuffer
	consumer := exec.Command(filepath.Join(bin, "consumer"))
	consumer.Env = append(os.Environ(), "WARREN_AMQP_URL="+vhostURL)
	consumer.Stdout, consumer.Stderr = &out, &out
	if err := consumer.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			consumer.Process.Kill()
			consumer.Wait()
		}
	})
	testenv.Eventually(t, "the consumer declared its topology", func() bool { return strings.Contains(out.String(), "ready\n") })

	publish := exec.Command(filepath.Join(bin, "publish"))
	publish.Env = consumer.Env
	var pubErr bytes.Buffer
	publish.Stderr = &pubErr
	pubOut, err := publish.Output()
	if err != nil {
		t.Fatalf("publish: %v\n%s%s", err, pubOut, pubErr.String())
	}
	if string(pubOut) != "published 3, producer queues 0\n" {
		t.Errorf("publish printed %q", pubOut)
	}
	testenv.Eventually(t, "the consumer handled 3 facts", func() bool { return strings.Count(out.String(), "handled ") == 3 })
	err = consumer.Wait()
	waited = true
	if err != nil {
		t.Fatalf("consumer: %v\n%s", err, out.String())
	}
	var handled []string
	for _, l := range strings.Split(out.String(), "\n") {
		if h, ok := strings.CutPrefix(l, "handled "); ok {
			handled = append(handled, h)
		}
	}
	slices.Sort(handled)
	if want := []string{"sku-1 item sku-1", "sku-2 item sku-2", "sku-3 item sku-3"}; !slices.Equal(handled, want) {
		t.Errorf("handled %q, want %q", handled, want)
	}

	// Each side declared only its part: the exchanges (the same, with the
	// same arguments, so neither declaration conflicts) and the
	// consumer's own queues; the producer declared no queue.
	u, err := url.Parse(vhostURL)
	if err != nil {
		t.Fatal(err)
	}
	admin := testenv.BrokerAdmin(t)
	vhost := strings.TrimPrefix(u.Path, "/")
	queues := strings.Fields(admin.Run(t, "--quiet", "list_queues", "-p", vhost, "--no-table-headers", "name"))
	slices.Sort(queues)
	if want := []string{"search-indexer", "search-indexer.poison", "search-indexer.retry.20ms"}; !slices.Equal(queues, want) {
		t.Errorf("queues on the broker %q, want the consumer's %q", queues, want)
	}
	exchanges := admin.Run(t, "--quiet", "list_exchanges", "-p", vhost, "--no-table-headers", "name", "type", "durable")
	for _, want := range []string{"catalogue.events\ttopic\ttrue", "catalogue.retry\ttopic\ttrue", "catalogue.dead\ttopic\ttrue"} {
		if !strings.Contains(exchanges, want) {
			t.Errorf("exchanges on the broker lack %q:\n%s", want, exchanges)
		}
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A consumer service in its own module reuses the producer's generated
// package: one Go type per fact across both modules.
func TestConsumerModuleReusesTheProducersPackage(t *testing.T) {
	m := newTwoModules(t, "example.com/catalogue/catalogueevents")
	files := m.generateAndBuild()
	for _, name := range []string{"publisher.go", "imports_example.com_catalogue_events_item_created.json.go"} {
		if files[name] {
			t.Errorf("the consumer's package has %s; the producer declares its facts", name)
		}
	}
	if !files["consumers.go"] || !files["topology.go"] {
		t.Errorf("the consumer's package lacks consumers.go or topology.go: %v", files)
	}
	// Its test kit, built and vetted with the module, publishes the
	// producer's types.
	if !files["searcheventstest"] {
		t.Errorf("the consumer's package has no test kit: %v", files)
	}
	m.warren(0, "check", filepath.Join(m.consumer, "events"))
	docs := m.warren(0, "docs", filepath.Join(m.consumer, "events"))
	for _, want := range []string{"## Imports", "`example.com/catalogue@v1.3.0/events (replaced by ../producer)`", "`v1.3.0`", "reused from `example.com/catalogue/catalogueevents`", "- Imported from: `example.com/catalogue@v1.3.0/events"} {
		if !strings.Contains(docs, want) {
			t.Errorf("warren docs lacks %q:\n%s", want, docs)
		}
	}
	m.onTheBroker()
}

// The same with the fact types generated in the consumer's package from
// the imported schemas.
func TestConsumerModuleGeneratesTheFactTypes(t *testing.T) {
	m := newTwoModules(t, "")
	files := m.generateAndBuild()
	if !files["imports_example.com_catalogue_events_item_created.json.go"] || files["imports_example.com_catalogue_events_item_deleted.json.go"] {
		t.Errorf("want the bound fact's type file and not the other's: %v", files)
	}
	if files["publisher.go"] {
		t.Error("the consumer's package has a publisher")
	}
	docs := m.warren(0, "docs", filepath.Join(m.consumer, "events"))
	if !strings.Contains(docs, "generated in this package from the imported schemas") {
		t.Errorf("warren docs does not say where the types come from:\n%s", docs)
	}
	// Nothing imports a package of the module now; a blank import (as
	// docs/IMPORTS.md says) keeps go mod tidy from dropping the requirement
	// the import is resolved through.
	writeFiles(t, m.consumer, map[string]string{"keep.go": "package main\n\nimport _ \"example.com/catalogue/catalogueevents\"\n"})
	goIn(t, m.consumer, "mod", "tidy")
	m.warren(0, "generate", "--check", "--out", filepath.Join(m.consumer, "searchevents"), filepath.Join(m.consumer, "events"))
	m.onTheBroker()
}

// A binding that matches none of the imported facts stays an error, in
// generate and in check.
func TestConsumerModuleBindingMatchesNothing(t *testing.T) {
	m := newTwoModules(t, "")
	writeFiles(t, m.consumer, map[string]string{
		"events/warren.json": `{"package": "searchevents", "imports": [{"module": "example.com/catalogue", "dir": "events"}], "consumers": {"search-indexer": {"bindings": ["catalogue.item.craeted"]}}}`,
	})
	out := m.warren(1, "check", filepath.Join(m.consumer, "events"))
	if !strings.Contains(out, `binding "catalogue.item.craeted" of consumer "search-indexer" matches no fact; did you mean "catalogue.item.created"?`) {
		t.Errorf("warren check:\n%s", out)
	}
	out = m.warren(1, "generate", "--out", filepath.Join(m.consumer, "searchevents"), filepath.Join(m.consumer, "events"))
	if !strings.Contains(out, `matches no fact; did you mean "catalogue.item.created"?`) {
		t.Errorf("warren generate:\n%s", out)
	}
}

// A reused package must be one warren generated in the module.
func TestConsumerModuleReusesAMissingPackage(t *testing.T) {
	m := newTwoModules(t, "example.com/catalogue/catalogueevents")
	out := m.warren(1, "generate", "--out", filepath.Join(m.consumer, "searchevents"), filepath.Join(m.consumer, "events"))
	want := `/imports/0/goPackage: goPackage "example.com/catalogue/catalogueevents": module example.com/catalogue has no package generated by warren there (no ` + filepath.Join(m.producer, "catalogueevents", "warren.go") + `)`
	if !strings.Contains(out, want) {
		t.Errorf("warren generate before the producer's package exists:\n%s\nwant %q", out, want)
	}
}

// Importing a module that go.mod does not require is an error naming the
// go get to run.
func TestImportOfAModuleNotInGoMod(t *testing.T) {
	goEnv(t)
	// The service requires nothing, so nothing is read from the module
	// cache; with no proxy, an attempt to fetch the module instead of
	// reading go.mod fails here rather than going to the network.
	t.Setenv("GOPROXY", "off")
	svc := t.TempDir()
	writeFiles(t, svc, map[string]string{
		"go.mod":             "module example.com/search\n\ngo 1.24\n",
		"events/warren.json": `{"package": "searchevents", "imports": [{"module": "example.com/catalogue", "dir": "events"}], "consumers": {"c": {"bindings": ["catalogue.#"]}}}`,
	})
	code, _, stderr := run(t, "generate", "--out", filepath.Join(svc, "out"), filepath.Join(svc, "events"))
	want := "warren.json:1:41: /imports/0: import example.com/catalogue/events: module example.com/catalogue is not required by the service's go.mod: run go get example.com/catalogue"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant it to contain %q", code, stderr, want)
	}
	if _, err := os.Stat(filepath.Join(svc, "out")); !os.IsNotExist(err) {
		t.Errorf("the failed generate wrote its output directory: %v", err)
	}
}

// writeProxy lays out a Go module proxy (GOPROXY=file://dir) serving mod
// at each version with the given files (go.mod included).
func writeProxy(t *testing.T, dir, mod string, versions map[string]map[string]string) {
	t.Helper()
	at := filepath.Join(dir, filepath.FromSlash(mod), "@v")
	var list []string
	for v, files := range versions {
		list = append(list, v)
		var zbuf bytes.Buffer
		zw := zip.NewWriter(&zbuf)
		for _, name := range slices.Sorted(maps.Keys(files)) {
			w, err := zw.Create(mod + "@" + v + "/" + name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte(files[name])); err != nil {
				t.Fatal(err)
			}
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		writeFiles(t, at, map[string]string{
			v + ".info": `{"Version": "` + v + `", "Time": "2026-01-01T00:00:00Z"}`,
			v + ".mod":  files["go.mod"],
			v + ".zip":  zbuf.String(),
		})
	}
	slices.Sort(list)
	writeFiles(t, at, map[string]string{"list": strings.Join(list, "\n") + "\n"})
}

// A producer's update removes a property the consumer's facts need and
// announces it with a raised x-version: the producer's own diff accepts
// it, the consumer's diff of the module update reports it as breaking for
// this consumer; a change to a fact the consumer does not bind is not its
// concern.
func TestDiffBaseModuleJudgesAnUpdateForThisConsumer(t *testing.T) {
	goEnv(t)
	proxy := t.TempDir()
	goMod := "module example.com/catalogue\n\ngo 1.24\n"
	v13 := map[string]string{"go.mod": goMod}
	for k, v := range producerSchemas {
		v13[k] = v
	}
	v14 := maps.Clone(v13)
	v14["events/item/created.json"] = `{"x-routing-key": "catalogue.item.created", "x-version": 2, "title": "ItemCreated", "type": "object", "required": ["sku"],
  "properties": {"sku": {"type": "string", "minLength": 3}}}`
	v14["events/item/deleted.json"] = `{"x-routing-key": "catalogue.item.deleted", "title": "ItemDeleted", "type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}, "reason": {"type": "string"}}}`
	writeProxy(t, proxy, "example.com/catalogue", map[string]map[string]string{"v1.3.0": v13, "v1.4.0": v14})
	t.Setenv("GOPROXY", "file://"+proxy)
	t.Setenv("GONOSUMDB", "example.com")
	// A module cache of the test's own: the test's modules stay out of
	// the shared one.
	cache := t.TempDir()
	t.Setenv("GOMODCACHE", cache)
	t.Cleanup(func() {
		// The module cache is read-only; the go command removes it.
		if out, err := exec.Command("go", "clean", "-modcache").CombinedOutput(); err != nil {
			t.Errorf("go clean -modcache: %v\n%s", err, out)
		}
	})

	svc := t.TempDir()
	writeFiles(t, svc, map[string]string{
		"go.mod":             "module example.com/search\n\ngo 1.24\n\nrequire example.com/catalogue v1.4.0\n",
		"events/warren.json": `{"package": "searchevents", "imports": [{"module": "example.com/catalogue", "dir": "events"}], "consumers": {"search-indexer": {"bindings": ["catalogue.item.created"]}}}`,
	})
	events := filepath.Join(svc, "events")
	code, stdout, stderr := run(t, "diff", "--base-module", "example.com/catalogue@v1.3.0", events)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"example.com/catalogue@v1.3.0/events/item/created.json:2:69: breaking: property-removed: catalogue.item.created /properties/name", "a break for the consumers here all the same", "1 breaking change for the consumers here"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "reason") || strings.Contains(stdout, "catalogue.item.deleted") {
		t.Errorf("the report judges a fact this consumer does not bind:\n%s", stdout)
	}

	// The producer's own diff of the same update: announced, so it passes.
	m, err := (&gomodResolverForTest{dir: svc}).dirs(t, "v1.3.0", "v1.4.0")
	if err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := run(t, "diff", m[0], m[1]); code != 0 || !strings.Contains(stdout, "intentional") {
		t.Errorf("the producer's diff: exit %d, want 0 with the break intentional\n%s%s", code, stdout, stderr)
	}

	// Nothing changes between a version and itself.
	if code, stdout, stderr := run(t, "diff", "--base-module", "example.com/catalogue@v1.4.0", events); code != 0 {
		t.Errorf("diff against the pinned version: exit %d, want 0\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := run(t, "diff", "--base-module", "example.com/other@v1.0.0", events); code != 2 || !strings.Contains(stderr, "imports no module example.com/other (it imports example.com/catalogue)") {
		t.Errorf("a module it does not import: exit %d\n%s", code, stderr)
	}
}

// gomodResolverForTest finds the module's versions in the module cache.
type gomodResolverForTest struct{ dir string }

func (g *gomodResolverForTest) dirs(t *testing.T, versions ...string) ([]string, error) {
	var out []string
	for _, v := range versions {
		m, err := (&gomod.Resolver{ModuleDir: g.dir}).Download(context.Background(), "example.com/catalogue", v)
		if err != nil {
			return nil, err
		}
		out = append(out, filepath.Join(m.Dir, "events"))
	}
	return out, nil
}

// In a monorepo, warren diff --base reads a consumer directory's path
// imports at the same revision: a fact the producer added since, which a
// widened binding now matches, is new to the consumer; a fact both
// revisions have is not.
func TestDiffBaseReadsPathImportsAtTheRevision(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null",
			"GIT_AUTHOR_NAME=CI", "GIT_AUTHOR_EMAIL=ci@example.com", "GIT_COMMITTER_NAME=CI", "GIT_COMMITTER_EMAIL=ci@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	writeFiles(t, repo, map[string]string{
		"catalogue/warren.json":       `{"package": "catalogueevents", "exchanges": {"events": "catalogue.events"}}`,
		"catalogue/item/created.json": `{"x-routing-key": "catalogue.item.created", "type": "object"}`,
		"search/warren.json":          `{"package": "searchevents", "imports": [{"path": "../catalogue"}], "consumers": {"indexer": {"bindings": ["catalogue.item.created"]}}}`,
	})
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "base")
	writeFiles(t, repo, map[string]string{
		"catalogue/item/deleted.json": `{"x-routing-key": "catalogue.item.deleted", "type": "object"}`,
		"search/warren.json":          `{"package": "searchevents", "imports": [{"path": "../catalogue"}], "consumers": {"indexer": {"bindings": ["catalogue.item.*"]}}}`,
	})
	code, stdout, stderr := run(t, "diff", "--base", "main", filepath.Join(repo, "search"))
	if code != 1 || !strings.Contains(stdout, `binding-started-matching: consumer indexer, fact catalogue.item.deleted: new fact "catalogue.item.deleted"`) {
		t.Errorf("exit %d, want 1 with the new fact reported\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "fact catalogue.item.created") {
		t.Errorf("a fact both revisions import is reported:\n%s", stdout)
	}
}
