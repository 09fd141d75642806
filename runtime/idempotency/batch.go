package idempotency

import (
	"context"
	"fmt"
	"strings"

	"github.com/warrenbus/warren/runtime/sqldb"
)

// maxBatchClaims bounds the claims of one statement: two parameters are
// shared and one is each claim's, well inside PostgreSQL's 65535 and
// SQLite's 32766 parameters. A larger batch claims in several statements.
const maxBatchClaims = 10000

// RunBatch claims (consumer, id) for each of messageIDs in one statement
// (one round trip; several only beyond 10000 ids) in one transaction, and
// calls fn with the ids whose claims are new and a context carrying the
// transaction ([Tx]). The ids fn reports failed have their claims deleted
// in the same transaction; then the rest commit with fn's writes. An
// error from fn rolls back everything and is returned as it is.
// duplicates are the ids claimed and committed before: fn does not see
// them, and is not called when every id is one. Any other error comes from
// the store or ctx and wraps the cause. It implements runtime.BatchGuard.
func (g *SQLGuard) RunBatch(ctx context.Context, consumer string, messageIDs []string,
	fn func(ctx context.Context, fresh []string) (failed []string, err error)) (duplicates []string, err error) {
	for _, id := range messageIDs {
		if err := checkKey(consumer, id); err != nil {
			return nil, err
		}
	}
	first := ""
	if len(messageIDs) > 0 {
		first = messageIDs[0]
	}
	tx, err := g.db.BeginTx(ctx, g.txOpts)
	if err != nil {
		return nil, claimError(ctx, "open batch claim transaction", consumer, first, fmt.Errorf("begin: %w", err))
	}
	settled := false
	defer func() {
		if !settled {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	claimed := make(map[string]bool, len(messageIDs))
	for start := 0; start < len(messageIDs); start += maxBatchClaims {
		chunk := messageIDs[start:min(start+maxBatchClaims, len(messageIDs))]
		if err := g.claimBatch(ctx, tx, consumer, chunk, claimed); err != nil {
			return nil, claimError(ctx, fmt.Sprintf("claim a batch of %d", len(messageIDs)), consumer, first, err)
		}
	}
	fresh := make([]string, 0, len(claimed))
	for _, id := range messageIDs {
		if claimed[id] {
			fresh = append(fresh, id)
		} else {
			duplicates = append(duplicates, id)
		}
	}
	if len(fresh) == 0 {
		return duplicates, nil
	}
	failed, err := fn(withTx(ctx, tx), fresh)
	if err != nil {
		return duplicates, err
	}
	if len(failed) > 0 {
		if err := g.release(ctx, tx, consumer, failed); err != nil {
			return duplicates, claimError(ctx, fmt.Sprintf("let go of %d failed claims", len(failed)), consumer, failed[0], err)
		}
	}
	if err := ctx.Err(); err != nil {
		return duplicates, claimError(ctx, "commit batch claim", consumer, first, err)
	}
	settled = true
	if err := tx.Commit(ctx); err != nil {
		return duplicates, claimError(ctx, "commit batch claim", consumer, first, err)
	}
	return duplicates, nil
}

// claimBatch inserts the claims of ids in one statement and adds to
// claimed those it inserted: the others were claimed before.
func (g *SQLGuard) claimBatch(ctx context.Context, tx sqldb.Tx, consumer string, ids []string, claimed map[string]bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (message_id, consumer, claimed_at) VALUES ", g.table.Quoted())
	args := make([]any, 0, len(ids)+2)
	args = append(args, consumer, g.dialect.Time(g.now()))
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "(%s, %s, %s)", g.param(i+3), g.param(1), g.param(2))
		args = append(args, id)
	}
	b.WriteString(" ON CONFLICT DO NOTHING RETURNING message_id")
	rows, err := tx.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		claimed[id] = true
	}
	return rows.Err()
}

// release deletes the claims of ids, made in tx, in one statement.
func (g *SQLGuard) release(ctx context.Context, tx sqldb.Tx, consumer string, ids []string) error {
	for start := 0; start < len(ids); start += maxBatchClaims {
		chunk := ids[start:min(start+maxBatchClaims, len(ids))]
		var b strings.Builder
		fmt.Fprintf(&b, "DELETE FROM %s WHERE consumer = %s AND message_id IN (", g.table.Quoted(), g.param(1))
		args := make([]any, 0, len(chunk)+1)
		args = append(args, consumer)
		for i, id := range chunk {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(g.param(i + 2))
			args = append(args, id)
		}
		b.WriteByte(')')
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// param is the n-th parameter, numbered in both dialects ($n, ?n), so
// that one statement can use a parameter in every row.
func (g *SQLGuard) param(n int) string {
	if g.dialect == SQLite {
		return fmt.Sprintf("?%d", n)
	}
	return g.dialect.Placeholder(n)
}

// RunBatch claims each of messageIDs and calls fn with those whose claims
// are new, with the semantics of [SQLGuard.RunBatch] but no transaction:
// the claims of the ids fn reports failed are dropped, the others kept
// once fn returns nil and ctx is live. A claim pending in another call is
// waited for. It implements runtime.BatchGuard.
func (g *MemoryGuard) RunBatch(ctx context.Context, consumer string, messageIDs []string,
	fn func(ctx context.Context, fresh []string) (failed []string, err error)) (duplicates []string, err error) {
	for _, id := range messageIDs {
		if err := checkKey(consumer, id); err != nil {
			return nil, err
		}
	}
	var fresh []string
	mine := map[string]*memoryClaim{}
	kept := map[string]bool{}
	defer func() { // also when fn panics: what is not kept is dropped
		for _, id := range fresh {
			g.settle(claimKey{consumer, id}, mine[id], kept[id])
		}
	}()
	for _, id := range messageIDs {
		c, dup, err := g.claim(ctx, consumer, id)
		if err != nil {
			return nil, err
		}
		if dup {
			duplicates = append(duplicates, id)
			continue
		}
		mine[id] = c
		fresh = append(fresh, id)
	}
	if len(fresh) == 0 {
		return duplicates, nil
	}
	failed, err := fn(ctx, fresh)
	if err != nil {
		return duplicates, err
	}
	if err := ctx.Err(); err != nil {
		return duplicates, claimError(ctx, "keep batch claims", consumer, fresh[0], err)
	}
	for _, id := range fresh {
		kept[id] = true
	}
	for _, id := range failed {
		delete(kept, id)
	}
	return duplicates, nil
}
