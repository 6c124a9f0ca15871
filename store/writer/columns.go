package writer

import (
	"context"
	"fmt"
)

// InsertColumns inserts whole columns into table of the sink's database in
// one INSERT naming columns (a comma-separated list, in the order of cols).
// It is the path for tables other than events and dead_letters (findings,
// diagnoses), so that every INSERT goes through the same PrepareBatch code.
// On error nothing may be assumed stored.
func (s *Sink) InsertColumns(ctx context.Context, table, columns string, cols []any) error {
	if err := s.send(ctx, table, columns, cols); err != nil {
		return fmt.Errorf("insert into %s.%s: %w", s.db, table, err)
	}
	return nil
}
