package lint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// input loads a test directory the way `warren check` does.
func input(t *testing.T, dir string) Input {
	t.Helper()
	s, err := load.Load(context.Background(), dir)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	return NewInput(s, nil)
}

// TestRules lints each directory under testdata (one per rule, plus a
// clean one and one where every rule is turned off) and checks the exact
// findings: severity, rule, position and message. Every directory must
// have a row here.
func TestRules(t *testing.T) {
	tests := map[string][]string{
		"clean":    nil,
		"disabled": nil, // x-warren-lint turns off what would be found
		"past-tense": {
			`warning past-tense order/cancel.json:2:20: routing key "order.cancel" ends in the verb "cancel", which asks for something to be done; a fact states what happened, e.g. "order.cancelled"`,
			`warning past-tense order/rebuild-index.json:2:20: routing key "order.rebuild-index" reads as a command ("rebuild" ...); a fact states what happened, e.g. "order.index-rebuilt"`,
		},
		"binding-matches-nothing": {
			`error binding-matches-nothing warren.json:7:9: binding "order.plcaed" of consumer "ledger" matches no fact; did you mean "order.placed"?`,
		},
		"consumer-handles-nothing": {
			`warning consumer-handles-nothing warren.json:9:5: consumer "archiver" handles nothing: none of its bindings matches a fact`,
			`error binding-matches-nothing warren.json:11:9: binding "invoice.*" of consumer "archiver" matches no fact`,
			`error binding-matches-nothing warren.json:12:9: binding "invoice.#" of consumer "archiver" matches no fact`,
		},
		"fact-unconsumed": {
			`info fact-unconsumed order/shipped.json:2:20: no consumer binds "order.shipped"; published now, it is unroutable (fine for a fact published ahead of its first consumer: disable fact-unconsumed here)`,
		},
		// A fact that only streams bind is kept there, not unroutable:
		// catalogue.import.completed (two streams) and
		// catalogue.item.retired (one). catalogue.item.priced, which a
		// stream consumer reads, and order.placed, which a queue
		// consumer reads, are consumed; order.shipped reaches nothing.
		"fact-unconsumed-stream": {
			`info fact-unconsumed catalogue/import-completed.json:2:20: no consumer reads "catalogue.import.completed": streams "audit-log" and "catalogue-log" keep it (warren.json "streams"), so it is routable, and a stream consumer added later reads what the stream still holds (fine for a fact kept for later or for an audit: disable fact-unconsumed here)`,
			`info fact-unconsumed catalogue/item-retired.json:2:20: no consumer reads "catalogue.item.retired": stream "catalogue-log" keeps it (warren.json "streams"), so it is routable, and a stream consumer added later reads what the stream still holds (fine for a fact kept for later or for an audit: disable fact-unconsumed here)`,
			`info fact-unconsumed order/shipped.json:2:20: no consumer binds "order.shipped"; published now, it is unroutable (fine for a fact published ahead of its first consumer: disable fact-unconsumed here)`,
		},
		// A consumer pinned to a version of which no version it reads is
		// published: legacy-mailer (1, while 2 and 3 are), tracker (1,
		// while the newest alone, 2, is) and legacy-feed (1 of an
		// imported fact whose producer publishes its newest alone);
		// mailer, pinned to 2, which is published, and ledger, which
		// reads the newest, are fine.
		"pinned-version-unpublished": {
			`warning pinned-version-unpublished warren.json:8:84: consumer "legacy-mailer" is pinned to version 1 of order.placed, but the publisher publishes versions 2, 3 (warren.json "versions"): it reads version 1 and no newer one, so it judges every order.placed by its version-1 schema and poisons each one that schema refuses; pin it to a published version (2 or 3; without a pin it reads the newest) and deploy it, or publish version 1 too ("versions": {"order.placed": {"publish": [1, 2, 3]}}) while it is pinned`,
			`warning pinned-version-unpublished warren.json:10:80: consumer "tracker" is pinned to version 1 of order.shipped, but the publisher publishes the newest alone, 2 (warren.json has no "versions" entry for it): it reads version 1 and no newer one, so it judges every order.shipped by its version-1 schema and poisons each one that schema refuses; pin it to a published version (2; without a pin it reads the newest) and deploy it, or publish version 1 too ("versions": {"order.shipped": {"publish": [1, 2]}}) while it is pinned`,
			`warning pinned-version-unpublished warren.json:11:100: consumer "legacy-feed" is pinned to version 1 of catalogue.item.priced, but its producer (../producers/catalogue) publishes the newest alone, 2 (its warren.json has no "versions" entry for it): it reads version 1 and no newer one, so it judges every catalogue.item.priced by its version-1 schema and poisons each one that schema refuses; pin it to a published version (2; without a pin it reads the newest) and deploy it, or ask its producer to publish version 1 too while it is pinned`,
		},
		"property-without-type": {
			`warning property-without-type order/placed.json:23:13: property "note" has no "type" (nor $ref, enum, const, allOf, oneOf, anyOf), so it accepts any JSON value and its Go field is raw JSON (json.RawMessage); keywords such as properties or items apply only to values of their type`,
			`warning property-without-type order/placed.json:26:14: property "extra" is true, which accepts any JSON value; say its "type"`,
			`warning property-without-type order/placed.json:59:22: property "phone" has no "type" (nor $ref, enum, const, allOf, oneOf, anyOf), so it accepts any JSON value and its Go field is raw JSON (json.RawMessage); keywords such as properties or items apply only to values of their type`,
		},
		"additional-properties-undecided": {
			`info additional-properties-undecided common/money.json:1:1: the schema does not decide: "additionalProperties": false closes it, a schema makes it a map, true keeps it open`,
			`info additional-properties-undecided order/placed.json:41:13: this object schema does not decide: "additionalProperties": false closes it, a schema makes it a map, true keeps it open`,
		},
		"required-not-in-properties": {
			`error required-not-in-properties order/placed.json:8:5: "totl" is required but no property declares it; a typo, or a missing entry in "properties"`,
			`error required-not-in-properties order/placed.json:44:13: "zip" is required but no property declares it; a typo, or a missing entry in "properties"`,
			// A oneOf branch (or a not in one) requiring a property the
			// schema beside it declares is fine; "fax" is declared nowhere.
			`error required-not-in-properties order/placed.json:90:13: "fax" is required but no property declares it; a typo, or a missing entry in "properties"`,
		},
		// Keys of vendors (x-owner, x-go-type) and of OpenAPI (example,
		// nullable) are not misspellings; severe ones fail the model (see
		// the model's tests), these only warn.
		"misspelt-keyword": {
			`warning misspelt-keyword order/placed.json:4:3: unknown keyword "descripton"; did you mean "description"? An unknown keyword is ignored, so as written this schema has no "description"`,
			`warning misspelt-keyword order/placed.json:10:3: unknown keyword "requried" beside "required"; a misspelt copy? As written it is ignored`,
			`warning misspelt-keyword order/placed.json:17:7: unknown keyword "$coment"; did you mean "$comment"? An unknown keyword is ignored, so as written this schema has no "$comment"`,
			`warning misspelt-keyword vendor/money.json:12:7: unknown keyword "exmaples" beside "examples"; a misspelt copy? As written it is ignored`,
			`warning misspelt-keyword vendor/money.json:16:7: unknown keyword "readonly"; did you mean "readOnly"? An unknown keyword is ignored, so as written this schema has no "readOnly"`,
		},
		"go-name-changed": {
			`warning go-name-changed vendor/hook.json:6:11: the field for property "-1" of HookFired is named Minus1: "X1" is taken`,
		},
		"vendored-default-refused": {
			`warning vendored-default-refused vendor/push.json:5:58: default "refs/heads/main" does not fit the schema: maxLength: got 15, want 3; the file is vendored, so the generated code leaves the default out`,
		},
		"ref-resolved-by-path": {
			`warning ref-resolved-by-path vendor/events/order.json:7:23: $ref "../types/thing.json#/$defs/Thing" resolves against $id "https://example.com/a" to "https://example.com/types/thing.json", which no file declares; warren resolved it against this file's place in the directory, to vendor/types/thing.json#/$defs/Thing, which tools that follow the specification do not do: write it as "https://example.com/schemas/thing#/$defs/Thing", the URL vendor/types/thing.json declares`,
			`warning ref-resolved-by-path vendor/events/order.json:8:23: $ref "../types/plain.json" resolves against $id "https://example.com/a" to "https://example.com/types/plain.json", which no file declares; warren resolved it against this file's place in the directory, to vendor/types/plain.json, which tools that follow the specification do not do: give vendor/types/plain.json an $id that agrees with its place, or write the $ref as a URL it declares`,
		},
		"request-past-tense": {
			`warning request-past-tense reserved.json:2:16: request key "stock.reserved" ends in "reserved", a past tense: a request asks for something to be done, in the imperative ("pricing.quote"); a key that states what happened is a fact in disguise: declare it with x-routing-key`,
		},
		"saga-never-starts": {
			`error saga-never-starts warren.json:10:25: saga "checkout": fact order.placed can never find an instance: no fact of the saga starts one (every "whenMissing" is "ignore" or "poison"); let a fact of "startsWith" start it`,
			`error saga-start-overridden warren.json:10:70: saga "checkout": fact order.placed is in "startsWith", but its "whenMissing" is "ignore", so it never starts an instance (it acks and drops the fact when none exists): expected "start", or no "whenMissing" (a fact of "startsWith" starts one by default); to have it only move instances that exist, remove it from "startsWith"`,
			`error saga-never-starts warren.json:11:23: saga "checkout": fact order.paid can never find an instance: no fact of the saga starts one (every "whenMissing" is "ignore" or "poison"); let a fact of "startsWith" start it`,
		},
		// A fact of startsWith that is told not to start: order.paid
		// ("ignore") and order.payment-requested ("poison"); order.placed
		// starts, so the saga does start (no saga-never-starts).
		"saga-start-overridden": {
			`error saga-start-overridden warren.json:11:68: saga "checkout": fact order.paid is in "startsWith", but its "whenMissing" is "ignore", so it never starts an instance (it acks and drops the fact when none exists): expected "start", or no "whenMissing" (a fact of "startsWith" starts one by default); to have it only move instances that exist, remove it from "startsWith"`,
			`error saga-start-overridden warren.json:12:81: saga "checkout": fact order.payment-requested is in "startsWith", but its "whenMissing" is "poison", so it never starts an instance (it poisons the fact when none exists): expected "start", or no "whenMissing" (a fact of "startsWith" starts one by default); to have it only move instances that exist, remove it from "startsWith"`,
		},
		// Two facts start instances by "order_id": the message names it
		// once.
		"saga-correlation-unmatched": {
			`warning saga-correlation-unmatched warren.json:11:40: saga "checkout": fact order.paid finds its instance by property "payment_id", which no fact that starts an instance uses ("order_id"): it can never find an instance unless the two name the same thing`,
		},
		"saga-state-not-object": {
			`error saga-state-not-object warren.json:7:16: saga "checkout": its state schema sagas/checkout.json is not an object ("type": "object" with properties): a state records where an instance stands, and must be able to grow fields that old states lack`,
		},
		"lint-keyword": {
			`error lint-keyword common/money.json:20:20: expected an object such as {"disable": ["past-tense"]}`,
			`error lint-keyword order/placed.json:43:7: unknown rule "past-tens": expected one of past-tense, binding-matches-nothing, consumer-handles-nothing, fact-unconsumed, pinned-version-unpublished, property-without-type, additional-properties-undecided, required-not-in-properties, misspelt-keyword, go-name-changed, vendored-default-refused, ref-resolved-by-path, request-past-tense, saga-never-starts, saga-start-overridden, saga-correlation-unmatched, saga-state-not-object`,
			`error lint-keyword order/placed.json:46:5: unknown key "enable": the only key is "disable"`,
		},
	}
	dirs, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, load.ManifestFile)); err != nil {
			continue
		}
		name := filepath.Base(d)
		want, ok := tests[name]
		if !ok {
			t.Errorf("testdata/%s has no expectation in TestRules", name)
			continue
		}
		delete(tests, name)
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, f := range Run(input(t, d)) {
				got = append(got, fmt.Sprintf("%s %s %s:%d:%d: %s", f.Severity, f.Rule, f.File, f.Line, f.Col, f.Message))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
	for name := range tests {
		t.Errorf("TestRules expects testdata/%s, which does not exist", name)
	}
	for _, r := range Rules {
		if _, err := os.Stat(filepath.Join("testdata", r.Name, load.ManifestFile)); err != nil {
			t.Errorf("rule %s has no case directory testdata/%s", r.Name, r.Name)
		}
	}
}

// Errors finds exactly the error findings Run finds, in every case
// directory: those of an x-warren-lint that a file turns off left out,
// a misspelt rule name in it kept.
func TestErrorsAreRunsErrorFindings(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, load.ManifestFile)); err != nil {
			continue
		}
		in := input(t, d)
		var want []Finding
		for _, f := range Run(in) {
			if f.Severity == Error {
				want = append(want, f)
			}
		}
		got := Errors(in)
		found += len(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: Errors (-Run's errors +got):\n%s", d, diff)
		}
	}
	if found == 0 {
		t.Error("no case directory has an error finding")
	}
}

// warren generate refuses a directory with an error finding, so every
// directory the project generates (the golden cases that are not errors,
// the examples, the benchmarks') must have none.
func TestGeneratedDirectoriesHaveNoErrorFindings(t *testing.T) {
	dirs, err := filepath.Glob("../../golden/*/events")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../../examples/*/events")
	dirs = append(append(dirs, more...), "../../bench/events")
	n := 0
	for _, d := range dirs {
		if strings.HasPrefix(filepath.Base(filepath.Dir(d)), "error-") {
			continue
		}
		n++
		for _, f := range Errors(input(t, d)) {
			t.Errorf("%s: %s", d, f)
		}
	}
	if n < 10 {
		t.Errorf("%d directories linted, want the golden cases, the examples and the benchmarks'", n)
	}
}

func TestFindingString(t *testing.T) {
	f := Finding{Rule: PastTense, Severity: Warning, File: "order/cancel.json", Line: 2, Col: 20, Message: "routing key ..."}
	if got, want := f.String(), "order/cancel.json:2:20: past-tense: routing key ... (warning)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	f.Line, f.Col = 0, 0
	if got, want := f.String(), "order/cancel.json: past-tense: routing key ... (warning)"; got != want {
		t.Errorf("String() without a position = %q, want %q", got, want)
	}
}

// golden/versions keeps legacy-mailer pinned to version 1 of order.placed
// while the publisher publishes 2 and 3, on purpose: its test shows the
// consumer poisoning the new facts. check warns about it, naming the
// consumer, the fact, the pin and what is published; publishing version
// 1 as well silences it.
func TestPinnedVersionUnpublishedInTheVersionsGolden(t *testing.T) {
	const dir = "../../golden/versions/events"
	pinned := func(in Input) []string {
		var out []string
		for _, f := range Run(in) {
			if f.Rule == PinnedVersionUnpublished {
				out = append(out, fmt.Sprintf("%s %s:%d:%d %s", f.Severity, f.File, f.Line, f.Col, f.Message))
			}
		}
		return out
	}
	want := []string{`warning warren.json:11:37 consumer "legacy-mailer" is pinned to version 1 of order.placed, but the publisher publishes versions 2, 3 (warren.json "versions"): it reads version 1 and no newer one, so it judges every order.placed by its version-1 schema and poisons each one that schema refuses; pin it to a published version (2 or 3; without a pin it reads the newest) and deploy it, or publish version 1 too ("versions": {"order.placed": {"publish": [1, 2, 3]}}) while it is pinned`}
	if diff := cmp.Diff(want, pinned(input(t, dir))); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}

	published := filepath.Join(t.TempDir(), "events")
	if err := os.CopyFS(published, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(published, load.ManifestFile)
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), `"order.placed": { "publish": [2, 3] }`, `"order.placed": { "publish": [1, 2, 3] }`, 1)
	if s == string(b) {
		t.Fatal("golden/versions no longer publishes order.placed as [2, 3]")
	}
	if err := os.WriteFile(manifest, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := pinned(input(t, published)); len(got) != 0 {
		t.Errorf("with version 1 published: %q; want no finding", got)
	}
}

// A finding in a file of an imported directory names the file where the
// user can open it, as a validation error does (load's UserPath): for a
// path import, relative to the importing directory, not its place in
// that directory's view ("imports/...").
func TestFindingsOfAnImportNameItsFile(t *testing.T) {
	root := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("producer/warren.json", `{"package": "catalogue"}`)
	write("producer/item/priced.json", `{"x-routing-key": "item.priced", "type": "object", "additionalProperties": false,
  "properties": {"tier": {"enum": ["gold", "Gold"]}}}`)
	write("consumer/warren.json", `{"package": "search", "imports": [{"path": "../producer"}],
  "consumers": {"indexer": {"bindings": ["item.priced"]}}}`)
	s, err := load.Load(context.Background(), filepath.Join(root, "consumer"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Build(context.Background(), s, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range Run(NewInput(s, m)) {
		got = append(got, fmt.Sprintf("%s %s:%d:%d", f.Rule, f.File, f.Line, f.Col))
	}
	want := []string{"go-name-changed ../producer/item/priced.json:2:44"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}
