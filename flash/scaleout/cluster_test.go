package scaleout

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flashindexer/flashindexer/flash/scaleout/natstest"
)

// freePorts returns n ports free now on loopback.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// startCluster runs a three-node JetStream cluster on loopback, each node
// with its own file store, and returns the nodes and their client URLs.
func startCluster(t *testing.T) ([]*server.Server, string) {
	t.Helper()
	ports := freePorts(t, 6)
	var routes []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[3+i]))
	}
	var nodes []*server.Server
	var urls []string
	for i := range 3 {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: ports[i],
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "flash", Host: "127.0.0.1", Port: ports[3+i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		}
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		nodes = append(nodes, s)
		urls = append(urls, s.ClientURL())
	}
	for _, s := range nodes {
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatal("a node did not start")
		}
	}
	t.Cleanup(func() {
		for _, s := range nodes {
			s.Shutdown()
		}
	})
	return nodes, strings.Join(urls, ",")
}

// One node of a three-node cluster (the stream's leader) stops mid-stream:
// the stream, replicated on three nodes, goes on; no event is lost, none
// is applied twice.
func TestReplica_ClusterNodeStops(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node cluster")
	}
	nodes, urls := startCluster(t)
	js := natstest.Connect(t, urls)
	cfg := StreamConfig("KV", "kv", 0, time.Hour)
	cfg.Replicas = 3
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stream jetstream.Stream
	for { // the cluster elects its meta leader first
		try, stop := context.WithTimeout(ctx, 2*time.Second)
		var err error
		stream, err = EnsureStream(try, js, cfg)
		stop()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("stream: %v (routes %d %d %d)", err, nodes[0].NumRoutes(), nodes[1].NumRoutes(), nodes[2].NumRoutes())
		}
		time.Sleep(50 * time.Millisecond)
	}
	run := newWorkload(2000).startExactlyOnce(t, js)

	info, err := stream.Info(ctx)
	if err != nil || info.Cluster == nil {
		t.Fatalf("stream info: %v", err)
	}
	stopped := 0
	for _, s := range nodes {
		if s.Name() == info.Cluster.Leader {
			s.Shutdown()
			stopped++
		}
	}
	if stopped != 1 {
		t.Fatalf("the stream's leader %q is none of the nodes", info.Cluster.Leader)
	}
	publish(t, run.relay, run.wl.events[1000:], 1000)
	t.Logf("stopped the stream's leader, %s", info.Cluster.Leader)
	run.check(t)
}
