// Package broker runs an embedded broker that speaks the Kafka protocol
// (franz-go's kfake), persisting to a data directory. It is the zero-setup
// default of `make demo`: real Kafka clients (kafka-go) talk to it over
// TCP exactly as they would to Apache Kafka.
//
// It is not a production broker: one node, no replication. Tests of the
// Kafka path run against a real Apache Kafka broker (deploy/services).
package broker

import (
	"fmt"
	"os"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Config configures the embedded broker.
type Config struct {
	// Port to listen on, on 127.0.0.1. 0 picks a free port.
	Port int `env:"HANDOFF_BROKER_PORT" envDefault:"19192"`
	// DataDir persists topics and committed offsets across restarts; empty
	// keeps everything in memory.
	DataDir string `env:"HANDOFF_BROKER_DATA_DIR"`
	// Partitions is the partition count of auto-created topics.
	Partitions int `env:"HANDOFF_BROKER_PARTITIONS" envDefault:"4"`
}

// Broker is a running embedded broker.
type Broker struct {
	c *kfake.Cluster
}

// Start starts a broker on 127.0.0.1.
func Start(cfg Config) (*Broker, error) {
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(cfg.Port),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(max(cfg.Partitions, 1)),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(4 << 20)}),
	}
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("broker: create data dir %s: %w", cfg.DataDir, err)
		}
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("broker: start embedded broker on 127.0.0.1:%d (is the port in use? set HANDOFF_BROKER_PORT): %w", cfg.Port, err)
	}
	return &Broker{c: c}, nil
}

// Addrs returns the broker's listen addresses, for HANDOFF_KAFKA_BROKERS.
func (b *Broker) Addrs() []string { return b.c.ListenAddrs() }

// Close stops the broker, flushing its data directory.
func (b *Broker) Close() { b.c.Close() }
