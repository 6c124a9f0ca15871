package restore

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/ingest/emit"
	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/model"
)

// Recorder records signal.restored. Ready proves, before the signal is
// written, that the record can be written; Record writes it after.
type Recorder interface {
	// Ready proves the record can be written: a signal is never written
	// when it fails.
	Ready(ctx context.Context) error
	// Record writes e, durably, and returns where it went.
	Record(ctx context.Context, e model.Event) (string, error)
	Close() error
}

// FileRecorder appends signal.restored to a JSON-lines events file, the
// one the restore's evidence was read from.
type FileRecorder struct {
	Path string
	f    *os.File
}

// Ready opens the file for appending and keeps it open until Record: what
// could be opened is what is written to, so a file made immutable or
// replaced after the proof does not lose the record.
func (r *FileRecorder) Ready(context.Context) error {
	if r.f != nil {
		return nil
	}
	f, err := os.OpenFile(r.Path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("signal.restored could not be appended to the events file: %w", err)
	}
	r.f = f
	return nil
}

// Record appends e as one JSON line, synced: the next diagnose of the file
// sees the restore.
func (r *FileRecorder) Record(ctx context.Context, e model.Event) (string, error) {
	if err := r.Ready(ctx); err != nil {
		return "", err
	}
	line := append(e.AppendJSON(nil), '\n')
	// A file whose last line has no newline would glue the event to it.
	if st, err := r.f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := r.f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := r.f.Write(line); err != nil {
		return "", fmt.Errorf("append signal.restored to %s: %w", r.Path, err)
	}
	if err := r.f.Sync(); err != nil {
		return "", fmt.Errorf("fsync %s: %w", r.Path, err)
	}
	return r.Path, nil
}

// Close closes the file, if Ready opened it.
func (r *FileRecorder) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// KafkaRecorder sends signal.restored to the events topic, as handoff
// emit does.
type KafkaRecorder struct {
	Brokers    []string
	Topic      string
	Timeout    time.Duration
	Partitions int
	em         *emit.Emitter
}

// Ready creates the emitter and fetches the topic's metadata (creating the
// topic when it is missing, as emit would), within Timeout: a broker that
// cannot be reached, or a topic without a leader, refuses the restore
// before the signal exists.
func (r *KafkaRecorder) Ready(ctx context.Context) error {
	if r.em == nil {
		em, err := emit.New(emit.Config{Brokers: r.Brokers, Topic: r.Topic, Timeout: r.Timeout, CreateTopic: true, Partitions: r.Partitions})
		if err != nil {
			return err
		}
		r.em = em
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	topic := r.Topic
	if topic == "" {
		topic = emit.DefaultTopic
	}
	partitions := r.Partitions
	if partitions <= 0 {
		partitions = 6
	}
	if err := topics.Ensure(ctx, r.Brokers, topics.Spec{Name: topic, Partitions: partitions}); err != nil {
		return fmt.Errorf("signal.restored could not be sent: %w", err)
	}
	return nil
}

// Record sends e and waits for the brokers' acknowledgement.
func (r *KafkaRecorder) Record(ctx context.Context, e model.Event) (string, error) {
	if r.em == nil {
		if err := r.Ready(ctx); err != nil {
			return "", err
		}
	}
	topic := r.Topic
	if topic == "" {
		topic = emit.DefaultTopic
	}
	return "kafka " + strings.Join(r.Brokers, ",") + " topic " + topic, r.em.Emit(ctx, e)
}

// Close releases the emitter.
func (r *KafkaRecorder) Close() error {
	if r.em == nil {
		return nil
	}
	err := r.em.Close()
	r.em = nil
	return err
}
