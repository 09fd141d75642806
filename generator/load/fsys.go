package load

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// A schema directory often arrives in a pull request: whatever it holds must
// not make warren read (and embed, and print) a file outside it. A symbolic
// link is the way out, so every link below the directory is resolved, one
// path component at a time, within the file system it came in; a link whose
// target is absolute or climbs above the root is refused, whether or not
// warren would read the file. Links to files inside the directory are
// followed. Links to directories are refused even when they stay inside:
// following them invites cycles and reads one file under two names.
//
// [Load] also reads through an [os.Root], which refuses escapes on every
// open, so a link that changes between this check and the read cannot
// leak either.

// maxLinkHops bounds how many symbolic links one path may go through, as
// the operating system does (it says "too many levels of symbolic links").
const maxLinkHops = 40

// errEscapes marks a link whose target lies outside the schema directory.
var errEscapes = errors.New("leads outside the schema directory")

// jsonFiles lists the *.json files below the root of fsys, sorted, skipping
// hidden files and directories. A symbolic link that leads outside the
// directory, or to a directory, is reported in bad (one entry per link);
// the walk goes on so that every such link is named at once.
func jsonFiles(ctx context.Context, fsys fs.FS) (paths []string, bad ErrorList, err error) {
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		hidden := p != "." && strings.HasPrefix(d.Name(), ".")
		if hidden {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			isDir, lerr := checkLink(fsys, p)
			switch {
			case lerr != nil:
				bad.Addf(p, "", "%v", lerr)
				return nil
			case isDir:
				bad.Addf(p, "", "symbolic link to a directory: warren follows links to files only (link each file, or move the directory here)")
				return nil
			}
		}
		if !d.IsDir() && path.Ext(p) == ".json" {
			paths = append(paths, p)
		}
		return nil
	})
	return paths, bad, err
}

// checkLink resolves the symbolic link at p and reports whether it leads to
// a directory, or why it cannot be followed. A file system that cannot read
// links (an embed.FS, a custom one) resolves them itself; all that is left
// to ask it is what the link is.
func checkLink(fsys fs.FS, p string) (isDir bool, err error) {
	target := p
	if lfs, ok := fsys.(fs.ReadLinkFS); ok {
		if target, err = realPath(lfs, p); err != nil {
			return false, err
		}
	}
	info, err := fs.Stat(fsys, target)
	if err != nil {
		return false, fmt.Errorf("symbolic link: %w", err)
	}
	return info.IsDir(), nil
}

// realPath returns the path, relative to the root of fsys, that name
// designates once every symbolic link on the way is followed. A link whose
// target is absolute or climbs above the root is an error wrapping
// errEscapes that names the link and its target.
func realPath(fsys fs.ReadLinkFS, name string) (string, error) {
	resolved := ""          // the real path so far; "" is the root
	var link, target string // the last link followed, for the error
	escapes := func() error {
		via := ""
		if link != name {
			via = " " + link
		}
		return fmt.Errorf("symbolic link%s to %s %w; warren reads only files inside it", via, strconv.Quote(target), errEscapes)
	}
	rest := strings.Split(name, "/")
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if resolved == "" {
				return "", escapes()
			}
			// Every component of resolved is a real directory, so ".."
			// is its lexical parent.
			if resolved = path.Dir(resolved); resolved == "." {
				resolved = ""
			}
			continue
		}
		next := path.Join(resolved, c)
		info, err := fsys.Lstat(next)
		if err != nil {
			return "", fmt.Errorf("symbolic link: %w", err)
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", fmt.Errorf("symbolic link: more than %d links on the way to %s", maxLinkHops, strconv.Quote(name))
		}
		t, err := fsys.ReadLink(next)
		if err != nil {
			return "", fmt.Errorf("symbolic link: %w", err)
		}
		link, target = next, filepath.ToSlash(t)
		if path.IsAbs(target) || filepath.IsAbs(t) || filepath.VolumeName(t) != "" {
			return "", escapes()
		}
		// The target is relative to the link's directory, which is
		// resolved: read its components from there.
		rest = append(strings.Split(target, "/"), rest...)
	}
	return resolved, nil
}
