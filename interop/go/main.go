// Command goclient is the interop suite's Go client: a producer and a push consumer
// built on github.com/apache/rocketmq-client-go/v2, talking to the nameserver under test.
//
//	goclient produce -ns ADDR[;ADDR] -topic T -count N -prefix P
//	goclient consume -ns ADDR[;ADDR] -topic T -group G -count N -prefix P [-wait 60s]
//
// Both print one machine-readable line starting with "RESULT ".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: goclient produce|consume [flags]")
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	ns := fs.String("ns", "", "nameserver addresses, ';'-separated")
	topic := fs.String("topic", "", "topic")
	group := fs.String("group", "interop_go_group", "consumer group")
	count := fs.Int("count", 100, "messages to send / expect")
	prefix := fs.String("prefix", "go", "message body prefix")
	timeout := fs.Duration("wait", 60*time.Second, "how long to wait for the messages")
	_ = fs.Parse(os.Args[2:])
	rlog.SetLogLevel("warn")
	addrs := strings.Split(*ns, ";")

	var err error
	switch mode {
	case "produce":
		err = produce(addrs, *topic, *count, *prefix)
	case "consume":
		err = consume(addrs, *topic, *group, *count, *prefix, *timeout)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
}

func produce(addrs []string, topic string, count int, prefix string) error {
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver(addrs)),
		producer.WithGroupName("interop_go_producer"),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(3*time.Second),
	)
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer func() { _ = p.Shutdown() }()
	ok, failed := 0, 0
	perBroker := map[string]int{}
	lastErr := ""
	start := time.Now()
	for i := 0; i < count; i++ {
		body := fmt.Sprintf("%s-%d", prefix, i)
		res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			failed++
			lastErr = err.Error()
			continue
		}
		if res.Status == primitive.SendOK {
			ok++
			perBroker[res.MessageQueue.BrokerName]++
		} else {
			failed++
			lastErr = fmt.Sprintf("status %d", res.Status)
		}
	}
	fmt.Printf("RESULT ok=%d failed=%d ms=%d brokers=%s", ok, failed, time.Since(start).Milliseconds(), fmtMap(perBroker))
	if lastErr != "" {
		fmt.Printf(" lastError=%s", strings.ReplaceAll(lastErr, "\n", " "))
	}
	fmt.Println()
	if failed > 0 {
		return fmt.Errorf("%d sends failed", failed)
	}
	return nil
}

func consume(addrs []string, topic, group string, count int, prefix string, timeout time.Duration) error {
	var mu sync.Mutex
	seen := map[string]bool{}
	perBroker := map[string]int{}
	total := 0
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver(addrs)),
		consumer.WithGroupName(group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		return err
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			total++
			b := string(m.Body)
			if strings.HasPrefix(b, prefix+"-") && !seen[b] {
				seen[b] = true
				perBroker[m.Queue.BrokerName]++
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		return err
	}
	start := time.Now()
	if err := c.Start(); err != nil {
		return err
	}
	for time.Since(start) < timeout {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= count {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	n := len(seen)
	fmt.Printf("RESULT distinct=%d total=%d ms=%d brokers=%s\n", n, total, time.Since(start).Milliseconds(), fmtMap(perBroker))
	mu.Unlock()
	_ = c.Shutdown()
	if n < count {
		return fmt.Errorf("received %d of %d", n, count)
	}
	return nil
}

func fmtMap(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
