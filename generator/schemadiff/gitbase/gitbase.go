// Package gitbase reads a schema directory as it was at a git revision, so
// that `warren diff --base origin/main events` can compare a working tree
// with its base in one command, in CI or locally.
//
// It asks git itself (ls-tree and cat-file, not a git library), reading
// blobs straight from the object store: .gitattributes export-ignore rules
// and the state of the working tree do not change what is read.
package gitbase

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Tree is a schema directory exported from a revision into a temporary
// directory. Remove it when done.
type Tree struct {
	Dir   string // the exported schema directory, inside a temporary directory
	Label string // how positions in it are shown: "origin/main:events"
	root  string // the temporary directory
}

// Remove deletes the temporary directory.
func (t *Tree) Remove() error { return os.RemoveAll(t.root) }

// Export writes the *.json files below dir, as they were at revision rev of
// the git repository that contains dir, into a new temporary directory.
// dir is a path in the working tree (it must exist there); the same path
// relative to the repository root is read at rev. Symbolic links and
// submodules at rev are not followed.
func Export(ctx context.Context, dir, rev string) (*Tree, error) {
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
	tmp, err := os.MkdirTemp("", "warren-base-*")
	if err != nil {
		return nil, err
	}
	t := &Tree{Dir: filepath.Join(tmp, filepath.FromSlash(sub)), Label: label, root: tmp}
	if err := writeBlobs(ctx, root, tmp, files); err != nil {
		_ = t.Remove()
		return nil, fmt.Errorf("read %s: %w", label, err)
	}
	return t, nil
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

// writeBlobs reads every blob through one `git cat-file --batch` and writes
// it below dest.
func writeBlobs(ctx context.Context, root, dest string, files []blob) error {
	var in bytes.Buffer
	for _, f := range files {
		in.WriteString(f.oid + "\n")
	}
	out, err := git(ctx, root, &in, "cat-file", "--batch")
	if err != nil {
		return err
	}
	r := bufio.NewReader(bytes.NewReader(out))
	for _, f := range files {
		header, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("cat-file: %w", err)
		}
		fields := strings.Fields(header)
		if len(fields) != 3 || fields[0] != f.oid || fields[1] != "blob" {
			return fmt.Errorf("cat-file: unexpected header %q for %s", strings.TrimSpace(header), f.path)
		}
		size, err := strconv.Atoi(fields[2])
		if err != nil {
			return fmt.Errorf("cat-file: bad size in %q", strings.TrimSpace(header))
		}
		content := make([]byte, size+1) // the content and a newline
		if _, err := io.ReadFull(r, content); err != nil {
			return fmt.Errorf("cat-file: %s: %w", f.path, err)
		}
		if !filepath.IsLocal(filepath.FromSlash(f.path)) {
			return fmt.Errorf("refusing path %q outside the repository", f.path)
		}
		target := filepath.Join(dest, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, content[:size], 0o644); err != nil {
			return err
		}
	}
	return nil
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
