package load

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

const linkFact = `{"x-routing-key": "a.b", "type": "object"}`

func symlink(target string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink}
}

// A symbolic link that leaves the schema directory is refused, naming the
// link, before any file is read; one that stays inside is followed.
func TestLoadFSSymlinks(t *testing.T) {
	tests := []struct {
		name string
		link *fstest.MapFile
		want string // "" when the link is followed
	}{
		{"inside", symlink("../a.json"), ""},
		{"inside through a link", symlink("../b/ln.json"), ""},
		{"climbs out", symlink("../../outside.json"), `c/link.json: symbolic link to "../../outside.json" leads outside the schema directory`},
		{"absolute", symlink("/etc/passwd"), `c/link.json: symbolic link to "/etc/passwd" leads outside the schema directory`},
		{"to a directory inside", symlink("../b"), "c/link.json: symbolic link to a directory"},
		{"dangling", symlink("nothing.json"), "c/link.json: symbolic link: lstat c/nothing.json"},
		{"loop", symlink("link.json"), "c/link.json: symbolic link: more than 40 links"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"warren.json": {Data: []byte(`{}`)},
				"a.json":      {Data: []byte(linkFact)},
				"b/ln.json":   symlink("../a.json"),
				"c/link.json": tt.link,
			}
			s, err := LoadFS(context.Background(), fsys)
			if tt.want == "" {
				if err == nil {
					// Both links read a.json: its routing key is taken twice.
					t.Fatalf("loaded %d docs without the duplicate routing key error", len(s.Docs))
				}
				if !strings.Contains(err.Error(), "c/link.json:1:19: /x-routing-key: routing key \"a.b\" is already declared by a.json:1:19") {
					t.Fatalf("link inside not followed: %v", err)
				}
				return
			}
			var list ErrorList
			if !errors.As(err, &list) || len(list) != 1 || !strings.HasPrefix(list[0].Error(), tt.want) {
				t.Fatalf("error = %v\nwant one error starting %s", err, tt.want)
			}
		})
	}
}

// A link through a link to a directory that leaves the root names the link
// that leads out.
func TestLoadFSSymlinkViaDirectory(t *testing.T) {
	fsys := fstest.MapFS{
		"warren.json":  {Data: []byte(`{}`)},
		".up":          symlink(".."), // hidden: never listed, but a way out
		"c/link.json":  symlink("../.up/outside.json"),
		"d/other.json": {Data: []byte(linkFact)},
	}
	_, err := LoadFS(context.Background(), fsys)
	want := `c/link.json: symbolic link .up to ".." leads outside the schema directory`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

// On disk, the case of the bug report: events/c/link.json ->
// ../../outside.json was read and its content generated into the package.
func TestLoadRefusesSymlinkOutOfDirectory(t *testing.T) {
	root := t.TempDir()
	secret := filepath.Join(root, "outside.json")
	if err := os.WriteFile(secret, []byte(`{"x-routing-key": "secret.read", "type": "object", "title": "TopSecret"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "events")
	writeTree(t, dir, map[string]string{"warren.json": `{}`, "a.json": linkFact})
	if err := os.MkdirAll(filepath.Join(dir, "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside.json", filepath.Join(dir, "c", "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(dir, "up")); err != nil {
		t.Fatal(err)
	}
	_, err := Load(context.Background(), dir)
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("error = %v, want two errors", err)
	}
	want := []string{
		`c/link.json: symbolic link to "../../outside.json" leads outside the schema directory; warren reads only files inside it`,
		`up: symbolic link to "` + filepath.ToSlash(root) + `" leads outside the schema directory; warren reads only files inside it`,
	}
	for i, e := range list {
		if e.Error() != want[i] {
			t.Errorf("error %d:\n got %s\nwant %s", i, e, want[i])
		}
	}
	if strings.Contains(err.Error(), "TopSecret") {
		t.Errorf("the error shows the outside file's content: %v", err)
	}

	// A link to a file inside is followed (the file it names is not a
	// *.json file, so it is read once, under the link's name).
	for _, p := range []string{"up", "c/link.json"} {
		if err := os.Remove(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(filepath.Join(dir, "a.json"), filepath.Join(dir, "a.schema")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../a.schema", filepath.Join(dir, "c", "common.json")); err != nil {
		t.Fatal(err)
	}
	s, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Facts) != 1 || s.Facts[0].Path() != "c/common.json" {
		t.Errorf("facts = %v, want the one read through c/common.json", s.Facts)
	}
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
