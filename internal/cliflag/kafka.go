package cliflag

import (
	"flag"
	"fmt"

	"github.com/handoff-dev/handoff/internal/topics"
)

// Kafka is where handoff's Kafka is and the events topic every command
// shares: the HANDOFF_KAFKA_* and HANDOFF_TOPIC* variables (parsed with
// the command's configuration as a named field), then the flags of
// RegisterFlags, which win.
type Kafka struct {
	Brokers []string `env:"HANDOFF_KAFKA_BROKERS" envSeparator:","`
	// Topic is the events topic.
	Topic string `env:"HANDOFF_TOPIC" envDefault:"handoff.events"`
	// Partitions and Replication shape the topics handoff creates when
	// they are missing.
	Partitions  int `env:"HANDOFF_TOPIC_PARTITIONS" envDefault:"6"`
	Replication int `env:"HANDOFF_TOPIC_REPLICATION" envDefault:"1"`
}

// RegisterFlags defines --kafka-brokers on fs over k's current value. The
// commands that read or write the events topic add RegisterTopicFlag,
// those that create topics RegisterTopicShapeFlags: each flag is defined
// here once, with one spelling and one help.
func (k *Kafka) RegisterFlags(fs *flag.FlagSet) {
	k.Brokers = TrimList(k.Brokers)
	fs.Var(List{P: &k.Brokers}, "kafka-brokers", "Kafka brokers, host:port[,host:port...] (HANDOFF_KAFKA_BROKERS)")
}

// RegisterTopicFlag defines --topic, the events topic.
func (k *Kafka) RegisterTopicFlag(fs *flag.FlagSet) {
	fs.StringVar(&k.Topic, "topic", k.Topic, "events topic (HANDOFF_TOPIC)")
}

// RegisterTopicShapeFlags defines --topic-partitions and
// --topic-replication.
func (k *Kafka) RegisterTopicShapeFlags(fs *flag.FlagSet) {
	fs.IntVar(&k.Partitions, "topic-partitions", k.Partitions, "partitions of topics created when missing (HANDOFF_TOPIC_PARTITIONS)")
	fs.IntVar(&k.Replication, "topic-replication", k.Replication, "replication factor of topics created when missing (HANDOFF_TOPIC_REPLICATION)")
}

// Check trims the brokers (the environment's list keeps blanks) and
// checks the settings, naming the flag and the variable of what is wrong.
// Without brokers it says so only when required.
func (k *Kafka) Check(required bool) error {
	k.Brokers = TrimList(k.Brokers)
	if len(k.Brokers) == 0 {
		if required {
			return fmt.Errorf("--kafka-brokers (HANDOFF_KAFKA_BROKERS): required: host:port of a Kafka broker")
		}
		return nil
	}
	if err := topics.CheckBrokers(k.Brokers); err != nil {
		return fmt.Errorf("--kafka-brokers (HANDOFF_KAFKA_BROKERS): %w", err)
	}
	if err := topics.CheckName(k.Topic); err != nil {
		return fmt.Errorf("--topic (HANDOFF_TOPIC): %w", err)
	}
	if k.Partitions < 1 || k.Replication < 1 {
		return fmt.Errorf("--topic-partitions %d / --topic-replication %d (HANDOFF_TOPIC_PARTITIONS / _REPLICATION): want 1 or more", k.Partitions, k.Replication)
	}
	return nil
}
