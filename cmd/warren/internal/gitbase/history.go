package gitbase

import (
	"context"
	"fmt"
	"strings"
)

// History lists, newest first, the commits before rev that left the schema
// directory dir in a state different from rev's: each is an older version
// of it. Commits are given as abbreviated hashes, valid revisions for
// [Read].
func History(ctx context.Context, dir, rev string) ([]string, error) {
	if rev == "" || strings.HasPrefix(rev, "-") {
		return nil, fmt.Errorf("git revision %q: expected a revision such as origin/main", rev)
	}
	prefix, err := git(ctx, dir, nil, "rev-parse", "--show-prefix")
	if err != nil {
		return nil, fmt.Errorf("find the git repository of %s: %w", dir, err)
	}
	sub := strings.TrimSuffix(strings.TrimSpace(string(prefix)), "/")
	if _, err := git(ctx, dir, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}"); err != nil {
		return nil, fmt.Errorf("git revision %q: no such commit", rev)
	}
	// rev-list names the commits that changed the directory; the newest is
	// the one whose state rev has.
	args := []string{"rev-list", "--abbrev-commit", "--abbrev=12", rev, "--", ":/" + sub}
	if sub == "" {
		args = args[:len(args)-2]
	}
	out, err := git(ctx, dir, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("history of %s at %s: %w", sub, rev, err)
	}
	commits := strings.Fields(string(out))
	if len(commits) <= 1 {
		return nil, nil
	}
	return commits[1:], nil
}
