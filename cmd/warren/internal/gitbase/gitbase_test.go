package gitbase

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo makes a git repository in a temporary directory, with a committed
// schema directory "events" that the working tree then changes.
func repo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("init", "-q", "-b", "main")
	run("config", "user.email", "ci@example.com")
	run("config", "user.name", "CI")
	write("events/warren.json", `{"package": "shop"}`+"\n")
	write("events/order/placed.json", `{"x-routing-key": "order.placed", "type": "object"}`+"\n")
	write("events/README.md", "not a schema\n")
	write("events/.gitattributes", "*.json export-ignore\n") // must not hide anything
	write("other/x.json", "{}\n")
	run("add", ".")
	run("commit", "-q", "-m", "base")
	run("tag", "base")
	write("events/order/placed.json", `{"x-routing-key": "order.placed", "type": "object", "x-version": 2}`+"\n")
	write("events/order/shipped.json", `{}`+"\n")
	return dir
}

// Read returns the schema files of the directory at the revision, by path
// below the directory: not the working tree's changes, not other
// directories, not files that are not schemas, whatever .gitattributes says.
func TestRead(t *testing.T) {
	dir := repo(t)
	tree, err := Read(context.Background(), filepath.Join(dir, "events"), "base")
	if err != nil {
		t.Fatal(err)
	}
	if tree.Label != "base:events" {
		t.Errorf("Label = %q, want %q", tree.Label, "base:events")
	}
	var got []string
	err = fs.WalkDir(tree.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(tree.FS, p)
		got = append(got, p+" "+strings.TrimSpace(string(b)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`order/placed.json {"x-routing-key": "order.placed", "type": "object"}`,
		`warren.json {"package": "shop"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("files read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// At the repository's root the tree is the whole repository's schema files.
func TestReadAtTheRoot(t *testing.T) {
	dir := repo(t)
	tree, err := Read(context.Background(), dir, "base")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(tree.FS, "other/x.json"); err != nil || tree.Label != "base:" {
		t.Errorf("label %q, other/x.json: %v", tree.Label, err)
	}
}

func TestReadErrors(t *testing.T) {
	dir := repo(t)
	tests := []struct {
		dir, rev, want string
	}{
		{filepath.Join(dir, "events"), "no-such-rev", `git revision "no-such-rev": no such commit`},
		{filepath.Join(dir, "events"), "--output=x", `git revision "--output=x": expected a revision`},
		{filepath.Join(dir, "events", "order"), "HEAD~5", `no such commit`},
		{t.TempDir(), "HEAD", "find the git repository of"},
	}
	for _, tt := range tests {
		_, err := Read(context.Background(), tt.dir, tt.rev)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Read(%s, %s) = %v, want an error containing %q", tt.dir, tt.rev, err, tt.want)
		}
	}
	// A directory that is new in the working tree has no schemas at the base.
	if err := os.MkdirAll(filepath.Join(dir, "fresh"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Read(context.Background(), filepath.Join(dir, "fresh"), "base")
	if err == nil || !strings.Contains(err.Error(), "base:fresh: no schema files in fresh at base") {
		t.Errorf("Read(fresh) = %v", err)
	}
}
