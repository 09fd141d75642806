// Package gitbase reads a schema directory as it was at a git revision, so
// that `warren diff --base origin/main events` can compare a working tree
// with its base in one command, in CI or locally.
//
// It asks git itself (ls-tree and cat-file, not a git library), reading
// blobs straight from the object store: .gitattributes export-ignore rules
// and the state of the working tree do not change what is read. The files
// are held in memory as an [fs.FS], so the generator and the differ that read
// them never see a process or a temporary directory; only the CLI does.
package gitbase

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"testing/fstest"
)

// Tree is a schema directory as it was at a revision.
type Tree struct {
	FS    fs.FS  // the *.json files, by path relative to the schema directory
	Label string // how positions in it are shown: "origin/main:events"
}

// Read reads the *.json files below dir as they were at revision rev of the
// git repository that contains dir. dir is a path in the working tree (it
// must exist there); the same path relative to the repository root is read
// at rev. Symbolic links and submodules at rev are not followed.
func Read(ctx context.Context, dir, rev string) (*Tree, error) {
	if rev == "" || strings.HasPrefix(rev, "-") {
		return nil, fmt.Errorf("git revision %q: expected a revision such as origin/main", rev)
	}
	prefix, err := git(ctx, dir, nil, "rev-parse", "--show-prefix")
	if err != nil {
		return nil, fmt.Errorf("find the git repository of %s: %w", dir, err)
	}
	top, err := git(ctx, dir, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("find the git repository of %s: %w", dir, err)
	}
	root := strings.TrimSpace(string(top))
	sub := strings.TrimSuffix(strings.TrimSpace(string(prefix)), "/")
	if _, err := git(ctx, root, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}"); err != nil {
		return nil, fmt.Errorf("git revision %q: no such commit in %s", rev, root)
	}
	files, err := listJSON(ctx, root, rev, sub)
	if err != nil {
		return nil, err
	}
	label := rev + ":" + sub
	if len(files) == 0 {
		where := sub
		if where == "" {
			where = "the repository root"
		}
		return nil, fmt.Errorf("%s: no schema files in %s at %s", label, where, rev)
	}
	fsys, err := readBlobs(ctx, root, sub, files)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", label, err)
	}
	return &Tree{FS: fsys, Label: label}, nil
}

// blob is one file of the tree at the revision.
type blob struct {
	oid  string
	path string // slash path relative to the repository root
}

// listJSON lists the regular *.json files below sub at rev.
func listJSON(ctx context.Context, root, rev, sub string) ([]blob, error) {
	// rev was verified as a commit and cannot start with '-'.
	args := []string{"ls-tree", "-r", "-z", "--full-tree", rev}
	if sub != "" {
		args = append(args, sub+"/")
	}
	out, err := git(ctx, root, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("list %s at %s: %w", sub, rev, err)
	}
	var files []blob
	for _, entry := range bytes.Split(out, []byte{0}) {
		if len(entry) == 0 {
			continue
		}
		// "<mode> <type> <oid>\t<path>"
		meta, p, ok := strings.Cut(string(entry), "\t")
		fields := strings.Fields(meta)
		if !ok || len(fields) != 3 || fields[1] != "blob" || (fields[0] != "100644" && fields[0] != "100755") {
			continue // symlinks, submodules
		}
		if path.Ext(p) != ".json" {
			continue
		}
		files = append(files, blob{oid: fields[2], path: p})
	}
	return files, nil
}

// readBlobs reads every blob through one `git cat-file --batch` into a file
// system rooted at sub.
//
// The file system is testing/fstest's MapFS: the standard library's
// in-memory fs.FS, complete (directories, ReadDir, Stat) and without any
// testing machinery; a hand-written one would only repeat it.
func readBlobs(ctx context.Context, root, sub string, files []blob) (fs.FS, error) {
	var in bytes.Buffer
	for _, f := range files {
		in.WriteString(f.oid + "\n")
	}
	out, err := git(ctx, root, &in, "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	fsys := fstest.MapFS{}
	r := bufio.NewReader(bytes.NewReader(out))
	for _, f := range files {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("cat-file: %w", err)
		}
		fields := strings.Fields(header)
		if len(fields) != 3 || fields[0] != f.oid || fields[1] != "blob" {
			return nil, fmt.Errorf("cat-file: unexpected header %q for %s", strings.TrimSpace(header), f.path)
		}
		size, err := strconv.Atoi(fields[2])
		if err != nil {
			return nil, fmt.Errorf("cat-file: bad size in %q", strings.TrimSpace(header))
		}
		content := make([]byte, size+1) // the content and a newline
		if _, err := io.ReadFull(r, content); err != nil {
			return nil, fmt.Errorf("cat-file: %s: %w", f.path, err)
		}
		rel, ok := f.path, true
		if sub != "" {
			rel, ok = strings.CutPrefix(f.path, sub+"/")
		}
		if !ok || !fs.ValidPath(rel) {
			return nil, fmt.Errorf("refusing path %q outside %s", f.path, sub)
		}
		fsys[rel] = &fstest.MapFile{Data: content[:size], Mode: 0o644}
	}
	return fsys, nil
}

// git runs git in dir and returns its standard output; a failure carries
// git's own message.
func git(ctx context.Context, dir string, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		var exit *exec.ExitError
		if errors.As(err, &exit) && msg != "" {
			return nil, fmt.Errorf("git %s: %s", args[0], msg)
		}
		return nil, fmt.Errorf("git %s: %w", args[0], err)
	}
	return stdout.Bytes(), nil
}
