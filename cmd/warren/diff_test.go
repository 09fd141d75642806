package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// diffCase returns the old and new directory of a case in
// generator/schemadiff/testdata.
func diffCase(name string) (string, string) {
	dir := filepath.Join("..", "..", "generator", "schemadiff", "testdata", name)
	return filepath.Join(dir, "old"), filepath.Join(dir, "new")
}

func TestDiffExitCodes(t *testing.T) {
	tests := []struct {
		name string
		code int
		out  string // the first line of the text report
	}{
		{"no-change", 0, "no changes to facts or consumers"},
		{"property-added-open", 0, "/order/placed.json:44:13: compatible: property-added: order.placed /properties/gift: new optional property \"gift\""},
		{"property-added", 1, "/order/placed.json:45:13: breaking: property-added: order.placed /properties/gift: new optional property \"gift\" on a closed object: consumers built from the old schema reject facts that carry it; breaks forward (old consumers, new facts) in FULL"},
		{"property-removed-announced", 0, "/order/placed.json:32:13: intentional: property-removed: order.placed /properties/note: property \"note\" was removed: facts written under the old schema carry it and the object is closed; breaks backward (new consumers, old facts) in FULL"},
		{"property-removed", 1, "/order/placed.json:32:13: breaking: property-removed: order.placed /properties/note: property \"note\" was removed"},
		{"binding-stopped-matching", 1, "/warren.json:5:19: breaking: binding-stopped-matching: consumer order-mailer, fact order.shipped: "},
		{"golden/deploy-order", 0, "/warren.json:6:19: ordered: binding-started-matching: consumer search-indexer, fact catalogue.import.failed: "},
		{"queue-type-changed", 1, "/warren.json:9:15: breaking: queue-type-changed: consumer ledger: queue type changed from quorum to classic, "},
		{"stream-publish-direct", 1, "/warren.json:8:18: breaking: stream-publish-direct: order.placed: stream \"order-log\" now publishes directly (\"publish\": \"direct\"): fact \"order.placed\" is written straight into the stream"},
		{"stream-publish-exchange", 0, "/warren.json:8:18: compatible: stream-publish-exchange: order.placed: stream \"order-log\" no longer publishes directly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, cur := diffCase(tt.name)
			code, stdout, stderr := run(t, "diff", old, cur)
			first, _, _ := strings.Cut(stdout, "\n")
			if code != tt.code || !strings.Contains(first, tt.out) || stderr != "" {
				t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant exit %d, first line containing %q", code, stderr, stdout, tt.code, tt.out)
			}
		})
	}
}

// A position in the old directory is printed under the old directory, so
// that it can be opened.
func TestDiffPrintsPositionsUnderTheirDirectory(t *testing.T) {
	old, cur := diffCase("property-removed")
	_, stdout, _ := run(t, "diff", old, cur)
	if want := filepath.ToSlash(old) + "/order/placed.json:32:13: breaking: "; !strings.HasPrefix(stdout, want) {
		t.Errorf("stdout:\n%s\nwant it to start with %q", stdout, want)
	}
}

func TestDiffFormats(t *testing.T) {
	old, cur := diffCase("golden/review")
	code, stdout, _ := run(t, "diff", "--format", "markdown", old, cur)
	if code != 1 || !strings.HasPrefix(stdout, "### warren diff: 4 unannounced breaking changes\n") ||
		!strings.Contains(stdout, "| 🔴 breaking | `property-removed` | `order.placed` `/properties/note` | property \"note\" was removed: facts written under the old schema carry it and the object is closed | breaks backward (new consumers, old facts) in `FULL` | `"+filepath.ToSlash(old)+"/order/placed.json:32` |\n") {
		t.Errorf("markdown: exit %d, stdout:\n%s", code, stdout)
	}

	code, stdout, _ = run(t, "diff", "--format", "json", old, cur)
	var got struct {
		Unannounced, Intentional, Compatible int
		Changes                              []struct{ Rule, Verdict string }
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout)
	}
	if code != 1 || got.Unannounced != 4 || got.Intentional != 1 || got.Compatible != 2 || len(got.Changes) != 7 ||
		got.Changes[0].Rule != "property-removed" || got.Changes[0].Verdict != "breaking" {
		t.Errorf("json: exit %d, got %+v", code, got)
	}
}

// A stream switched to "publish": "direct" is a change to warren.json
// that breaks the queues other services bind to its facts: --format json
// files it under each fact, at the stream's "publish", with the order in
// which to deploy.
func TestDiffStreamPublishDirectJSON(t *testing.T) {
	old, cur := diffCase("stream-publish-direct")
	code, stdout, stderr := run(t, "diff", "--format", "json", old, cur)
	var got struct {
		Unannounced int
		Changes     []struct{ Rule, Verdict, Breaks, Fact, Side, File, Pointer, Message string }
		Deploy      []struct{ Fact, Breaks, First, Message string }
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout)
	}
	if code != 1 || stderr != "" || got.Unannounced != 2 || len(got.Changes) != 2 || len(got.Deploy) != 2 {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	for i, fact := range []string{"order.placed", "order.shipped"} {
		c, d := got.Changes[i], got.Deploy[i]
		if c.Rule != "stream-publish-direct" || c.Verdict != "breaking" || c.Breaks != "forward" || c.Fact != fact ||
			c.Side != "new" || c.File != "warren.json" || c.Pointer != "/streams/order-log/publish" ||
			!strings.Contains(c.Message, `a queue of another service bound to "`+fact+`" on the exchange stops receiving it`) {
			t.Errorf("change %d: %+v", i, c)
		}
		if d.Fact != fact || d.Breaks != "forward" || d.First != "consumers" || !strings.Contains(d.Message, `must read stream "order-log"`) {
			t.Errorf("deploy %d: %+v", i, d)
		}
	}
}

// gitRepo commits the old side of a diff case as events/ in a new
// repository, then puts the new side in the working tree.
func gitRepo(t *testing.T, name string) string {
	t.Helper()
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
	old, cur := diffCase(name)
	events := filepath.Join(repo, "events")
	copyTree(t, old, events)
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "base")
	if err := os.RemoveAll(events); err != nil {
		t.Fatal(err)
	}
	copyTree(t, cur, events)
	return repo
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		target := filepath.Join(to, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDiffBase(t *testing.T) {
	repo := gitRepo(t, "property-removed")
	events := filepath.Join(repo, "events")
	code, stdout, stderr := run(t, "diff", "--base", "main", events)
	want := `main:events/order/placed.json:32:13: breaking: property-removed: order.placed /properties/note: property "note" was removed: facts written under the old schema carry it and the object is closed; breaks backward (new consumers, old facts) in FULL`
	if code != 1 || !strings.HasPrefix(stdout, want+"\n") || stderr != "" {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant exit 1 and a first line %q", code, stderr, stdout, want)
	}

	// The base of an unchanged tree is the tree itself.
	clean := gitRepo(t, "no-change")
	if code, stdout, stderr := run(t, "diff", "--base", "HEAD", filepath.Join(clean, "events")); code != 0 || stdout != "no changes to facts or consumers\n" {
		t.Errorf("unchanged: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestDiffCannotCompare(t *testing.T) {
	repo := gitRepo(t, "no-change")
	old, cur := diffCase("no-change")
	invalid := schemaDir(t, map[string]string{"warren.json": `{"package": 1}`})
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"diff", "--base", "no-such-rev", filepath.Join(repo, "events")}, `git revision "no-such-rev": no such commit`},
		{[]string{"diff", invalid, cur}, "warren diff: the old directory " + filepath.ToSlash(invalid) + " is not valid"},
		{[]string{"diff", old, invalid}, invalid + "/warren.json:1:13: /package: expected string, got 1"},
		{[]string{"diff", old}, "warren diff: expected OLD_DIR NEW_DIR"},
		{[]string{"diff", "--base", "main", old, cur}, "warren diff: with --base, expected one NEW_DIR"},
		{[]string{"diff", "--format", "html", old, cur}, `warren diff: --format "html": expected text, markdown, json, github or sarif`},
		{[]string{"diff", "../../golden/versions/events", "../../golden/error-upcast-not-mechanical/events"}, `placed.v2.json:4:15: /x-upcast: fact order.placed version 2 declares x-upcast "generated", but the change from version 1 (order/placed.v1.json) is not mechanical`},
	}
	for _, tt := range tests {
		code, stdout, stderr := run(t, tt.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q", tt.args, code, stdout, stderr, tt.stderr)
		}
	}
}

func TestDiffUsage(t *testing.T) {
	code, stdout, _ := run(t, "diff", "--help")
	for _, want := range []string{"warren diff --base origin/main --format markdown ./events", "property-removed", "binding-stopped-matching", "stream-publish-direct", "stream-publish-exchange", "Exit status"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("diff --help: exit %d, missing %q in:\n%s", code, want, stdout)
		}
	}
}

// warren diff --format json prints exactly the golden report of each
// golden case (JSON positions are relative to each directory), with the
// exit status its verdicts call for.
func TestDiffGoldenJSON(t *testing.T) {
	for name, code := range map[string]int{"golden/review": 1, "golden/deploy-order": 0} {
		old, cur := diffCase(name)
		want, err := os.ReadFile(filepath.Join(filepath.Dir(old), "want.json"))
		if err != nil {
			t.Fatal(err)
		}
		got, stdout, stderr := run(t, "diff", "--format", "json", old, cur)
		if got != code || stdout != string(want) || stderr != "" {
			t.Errorf("%s: exit %d (want %d), stderr %q, stdout:\n%s\nwant:\n%s", name, got, code, stderr, stdout, want)
		}
	}
}

// gitCommits commits each state of a schema directory, in order, as
// events/ of a new repository, and returns the path of events/.
func gitCommits(t *testing.T, states ...map[string]string) string {
	t.Helper()
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
	git("init", "-q", "-b", "main")
	events := filepath.Join(repo, "events")
	for i, files := range states {
		if err := os.RemoveAll(events); err != nil {
			t.Fatal(err)
		}
		for name, body := range files {
			p := filepath.Join(events, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		git("add", "-A")
		git("commit", "-q", "-m", fmt.Sprintf("state %d", i+1))
	}
	return events
}

// Three commits: v1 with an optional "note" string on an open object; v2
// without it (compatible both ways); v3 with "note" back as an integer
// (compatible with v2, not with v1, whose consumers may still run and
// whose facts may still be queued). FULL compares v3 with v2 only;
// FULL_TRANSITIVE also with v1, until the x-version is raised.
func TestDiffTransitiveReadsGitHistory(t *testing.T) {
	state := func(mode string, version int, props string) map[string]string {
		return map[string]string{
			"warren.json": `{"package": "shop", "compatibility": "` + mode + `"}`,
			"order/placed.json": fmt.Sprintf(`{"x-routing-key": "order.placed", "x-version": %d, "type": "object",
  "properties": {"id": {"type": "string"}%s}}`, version, props),
		}
	}
	const note, none, number = `, "note": {"type": "string"}`, ``, `, "note": {"type": "integer"}`
	tests := []struct {
		name   string
		mode   string
		first  int // x-version of v1; v2 and v3 have 2
		code   int
		report string
	}{
		{"transitive", "FULL_TRANSITIVE", 2, 1, "" +
			"events/order/placed.json:2:61: breaking: type-changed: order.placed /properties/note: type changed from \"string\" to \"integer\"; breaks both ways in FULL_TRANSITIVE, against ",
		},
		{"previous only", "FULL", 2, 0, "events/order/placed.json:2:52: compatible: property-added: order.placed /properties/note: new optional property \"note\"\n1 compatible change\n"},
		{"raised since v1", "FULL_TRANSITIVE", 1, 0, "events/order/placed.json:2:52: compatible: property-added: order.placed /properties/note: new optional property \"note\"\n1 compatible change\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := gitCommits(t, state(tt.mode, tt.first, note), state(tt.mode, 2, none), state(tt.mode, 2, number))
			code, stdout, stderr := run(t, "diff", "--base", "HEAD~1", events)
			stdout = strings.ReplaceAll(stdout, filepath.ToSlash(events), "events")
			if code != tt.code || !strings.HasPrefix(stdout, tt.report) || stderr != "" {
				t.Errorf("exit %d (want %d), stderr %q, stdout:\n%s\nwant it to start with:\n%s", code, tt.code, stderr, stdout, tt.report)
			}
			// The break is against the first commit, named as a revision.
			if against := regexp.MustCompile(`against ([0-9a-f]{12}):events\n`).FindStringSubmatch(stdout); tt.code == 1 && (against == nil || !strings.HasPrefix(firstCommit(t, events), against[1])) {
				t.Errorf("the break does not name the first commit:\n%s", stdout)
			}
		})
	}
}

// firstCommit returns the hash of the repository's root commit.
func firstCommit(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "rev-list", "--max-parents=0", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// Two directories have no history: a _TRANSITIVE fact is compared with the
// old one alone, and warren diff says so.
func TestDiffTransitiveWithoutBase(t *testing.T) {
	dir := func(props string) string {
		return schemaDir(t, map[string]string{
			"warren.json":       `{"package": "shop", "compatibility": "BACKWARD_TRANSITIVE"}`,
			"order/placed.json": `{"x-routing-key": "order.placed", "type": "object", "properties": {"id": {"type": "string"}` + props + `}}`,
		})
	}
	code, stdout, stderr := run(t, "diff", dir(""), dir(`, "note": {"type": "string"}`))
	want := "warren diff: note: order.placed is in a _TRANSITIVE mode, but without --base there is no history to compare it with; it is compared with OLD_DIR only\n"
	if code != 0 || stderr != want || !strings.HasSuffix(stdout, "1 compatible change\n") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant exit 0 and the note %q", code, stderr, stdout, want)
	}
}

// The exit status in every mode, for a change that breaks forward, one
// that breaks backward and one that breaks both ways.
func TestDiffExitCodeInEveryMode(t *testing.T) {
	modes := []string{"BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE"}
	want := map[string][]int{ // case -> exit status per mode, in the order of modes
		"property-added":   {0, 0, 1, 1, 1, 1, 0}, // forward
		"property-removed": {1, 1, 0, 0, 1, 1, 0}, // backward
		"type-changed":     {1, 1, 1, 1, 1, 1, 0}, // both
	}
	for name, codes := range want {
		for i, mode := range modes {
			old, cur := diffCase(name)
			dirs := [2]string{t.TempDir(), t.TempDir()}
			for j, from := range []string{old, cur} {
				copyTree(t, from, dirs[j])
				manifest := filepath.Join(dirs[j], "warren.json")
				src, err := os.ReadFile(manifest)
				if err != nil {
					t.Fatal(err)
				}
				withMode := strings.Replace(string(src), `"package": "shop",`, `"package": "shop", "compatibility": "`+mode+`",`, 1)
				if withMode == string(src) {
					t.Fatalf("%s: no package line to put the mode after", manifest)
				}
				if err := os.WriteFile(manifest, []byte(withMode), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, stdout, stderr := run(t, "diff", dirs[0], dirs[1])
			wantStderr := regexp.MustCompile(`^$`)
			if strings.HasSuffix(mode, "_TRANSITIVE") {
				// A note per fact that there is no history to compare with.
				wantStderr = regexp.MustCompile(`^(warren diff: note: \S+ is in a _TRANSITIVE mode, but without --base there is no history to compare it with; it is compared with OLD_DIR only\n)+$`)
			}
			// The mode as a whole word: " in BACKWARD" is also in
			// " in BACKWARD_TRANSITIVE".
			inMode := regexp.MustCompile(" in " + mode + `\b`)
			if code != codes[i] || !wantStderr.MatchString(stderr) || !inMode.MatchString(stdout) {
				t.Errorf("%s in %s: exit %d (want %d), stderr %q, stdout:\n%s", name, mode, code, codes[i], stderr, stdout)
			}
		}
	}
}

// --format github and sarif judge the same changes as the text report:
// the exit status is the same, each change a command or a result.
func TestDiffAnnotationFormats(t *testing.T) {
	old, cur := "../../generator/schemadiff/testdata/versions-side-by-side/old", "../../generator/schemadiff/testdata/versions-side-by-side/new"
	code, stdout, stderr := run(t, "diff", "--format", "github", old, cur)
	if code != 0 || !strings.Contains(stdout, "::warning file="+cur+"/order/placed.v2.json,line=11,col=15,title=warren diff%3A required-property-added (intentional)::") ||
		!strings.Contains(stdout, "::notice title=warren diff%3A migration of order.placed::") {
		t.Errorf("github: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	code, stdout, stderr = run(t, "diff", "--format", "sarif", old, cur)
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []struct {
				RuleID string `json:"ruleId"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &log); err != nil || code != 0 || log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) != 8 {
		t.Errorf("sarif: exit %d, err %v, stderr %q, stdout:\n%s", code, err, stderr, stdout)
	}
}

// A new directory whose files load but whose model does not build (what
// warren check and generate refuse) is still compared, and the report
// printed, but the diff fails: exit 1, the build errors on stderr after
// the report, as warren check prints them. Only the new directory must
// build; the old one is what runs now.
func TestDiffNewDirectoryDoesNotBuild(t *testing.T) {
	// Both sides bind a fact that does not exist: no change, and yet the
	// directory cannot be generated.
	unbuilt := map[string]string{
		"warren.json":       `{"package": "shop", "consumers": {"mailer": {"bindings": ["order.placed", "order.plcaed"]}}}`,
		"order/placed.json": `{"x-routing-key": "order.placed", "type": "object", "properties": {"id": {"type": "string"}}}`,
	}
	unchanged := schemaDir(t, unbuilt)
	tests := []struct {
		name     string
		old, new string
		stdout   string // the first line of the report
		stderr   []string
	}{
		{"no change", schemaDir(t, unbuilt), unchanged, "no changes to facts or consumers", []string{
			unchanged + `/warren.json:1:75: /consumers/mailer/bindings/1: consumer "mailer": binding "order.plcaed" matches no fact; did you mean "order.placed"?`,
			"warren diff: the new directory " + unchanged + " does not build (1 validation error): warren check and generate refuse it, so the change cannot ship as it is\n",
		}},
		// The user's trial: the publish list dropped while two consumers
		// are pinned to the version it published besides the newest.
		// The old directory need not build.
		{"old directory only", unchanged, schemaDir(t, map[string]string{
			"warren.json":       `{"package": "shop", "consumers": {"mailer": {"bindings": ["order.placed"]}}}`,
			"order/placed.json": unbuilt["order/placed.json"],
		}), "no changes to facts or consumers", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "diff", tt.old, tt.new)
			first, _, _ := strings.Cut(stdout, "\n")
			want := 1
			if tt.stderr == nil {
				want = 0
			}
			ok := code == want && strings.Contains(first, tt.stdout)
			for _, s := range tt.stderr {
				ok = ok && strings.Contains(stderr, filepath.ToSlash(s))
			}
			if tt.stderr == nil {
				ok = ok && stderr == ""
			}
			if !ok {
				t.Errorf("exit %d (want %d), stdout:\n%s\nstderr:\n%s\nwant a first line containing %q and on stderr %q", code, want, stdout, stderr, tt.stdout, tt.stderr)
			}
		})
	}

	// warren diff --base: a version dropped from the publish list while
	// consumers are pinned to it is a breaking change, from git too.
	repo := gitRepo(t, "version-unpublished")
	code, stdout, stderr := run(t, "diff", "--base", "main", filepath.Join(repo, "events"))
	if code != 1 || !strings.Contains(stdout, "breaking: version-unpublished: order.placed") || strings.Contains(stderr, "does not build") {
		t.Errorf("--base: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
