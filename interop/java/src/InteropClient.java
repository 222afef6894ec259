// Test client for the interop suite: a producer, a push consumer and a continuous producer,
// written against the public API shared by rocketmq-client 4.9.x and 5.x so that the same
// source is compiled (at test time) against either generation's jars.
//
// Usage: java InteropClient <mode> key=value...
//   produce       ns=ADDR topic=T count=N prefix=P [timeoutMs=3000]   (ns=- : address server)
//   consume       ns=ADDR topic=T group=G count=N prefix=P [timeoutSec=60] [keysFile=F]
//                 keysFile: the bodies it must receive, one a line (count is then their number);
//                 the RESULT line adds expected=, missing= and the first missing bodies
//   produce-loop  ns=ADDR topic=T durationMs=D [intervalMs=20] [timeoutMs=1000] [pollMs=30000]
//                 [prefix=P] [stopFile=F]
//                 prefix: body P-i (default loop-i), printed as the SEND line's 6th field;
//                 stopFile: stop (and shut the producer down) as soon as that file exists
//   produce-fresh ns=ADDR topic=T durationMs=D [intervalMs=500] [timeoutMs=3000]
//                 a new producer (own client instance, so no cached route) per send, like an
//                 application instance starting up; prints one SEND line per send
//   nsquery       ns=ADDR [topic=T] [kvNamespace=N kvKey=K kvValue=V]
//                 talks to the nameserver only (through a started producer's client API):
//                 cluster info, the route of T, a KV put then get; prints CLUSTER/ROUTE/KV lines
// Any producer mode also takes accessKey=AK secretKey=SK: every request is then signed with
// an AclClientRPCHook (looked up by name, so the source compiles against either generation).
// Every mode prints machine-readable lines starting with "RESULT " or "SEND ".

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class InteropClient {
    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: InteropClient produce|consume|produce-loop|nsquery key=value...");
            System.exit(2);
        }
        Map<String, String> opt = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq > 0) {
                opt.put(args[i].substring(0, eq), args[i].substring(eq + 1));
            }
        }
        int rc;
        switch (args[0]) {
            case "produce":
                rc = produce(opt);
                break;
            case "consume":
                rc = consume(opt);
                break;
            case "produce-loop":
                rc = produceLoop(opt);
                break;
            case "produce-fresh":
                rc = produceFresh(opt);
                break;
            case "nsquery":
                rc = nsQuery(opt);
                break;
            default:
                System.err.println("unknown mode " + args[0]);
                rc = 2;
        }
        System.out.flush();
        // Client threads are not all daemons in every version: exit explicitly.
        System.exit(rc);
    }

    private static String need(Map<String, String> opt, String key) {
        String v = opt.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing " + key + "=");
        }
        return v;
    }

    /** An AclClientRPCHook for accessKey=/secretKey=, or null without them. */
    private static org.apache.rocketmq.remoting.RPCHook aclHook(Map<String, String> opt) throws Exception {
        String accessKey = opt.get("accessKey");
        if (accessKey == null) {
            return null;
        }
        Class<?> credentials = Class.forName("org.apache.rocketmq.acl.common.SessionCredentials");
        Object c = credentials.getConstructor(String.class, String.class).newInstance(accessKey, need(opt, "secretKey"));
        Class<?> hook = Class.forName("org.apache.rocketmq.acl.common.AclClientRPCHook");
        return (org.apache.rocketmq.remoting.RPCHook) hook.getConstructor(credentials).newInstance(c);
    }

    private static DefaultMQProducer newProducer(Map<String, String> opt, String group) throws Exception {
        org.apache.rocketmq.remoting.RPCHook hook = aclHook(opt);
        DefaultMQProducer p = hook == null ? new DefaultMQProducer(group) : new DefaultMQProducer(group, hook);
        // ns=- : no nameserver address; the client fetches it from the address server named by
        // -Drocketmq.namesrv.domain (TopAddressing).
        String ns = need(opt, "ns");
        if (!ns.equals("-")) {
            p.setNamesrvAddr(ns);
        }
        p.setInstanceName(group + "-" + ProcessHandle.current().pid());
        p.setVipChannelEnabled(false);
        p.setSendMsgTimeout(Integer.parseInt(opt.getOrDefault("timeoutMs", "3000")));
        p.setRetryTimesWhenSendFailed(2);
        p.setPollNameServerInterval(Integer.parseInt(opt.getOrDefault("pollMs", "30000")));
        p.start();
        return p;
    }

    private static int produce(Map<String, String> opt) throws Exception {
        String topic = need(opt, "topic");
        int count = Integer.parseInt(need(opt, "count"));
        String prefix = need(opt, "prefix");
        DefaultMQProducer p = newProducer(opt, "interop_producer");
        int ok = 0;
        int failed = 0;
        Map<String, Integer> perBroker = new TreeMap<>();
        String lastError = "";
        long t0 = System.currentTimeMillis();
        for (int i = 0; i < count; i++) {
            Message m = new Message(topic, "TagA", prefix + "-" + i,
                (prefix + "-" + i).getBytes(StandardCharsets.UTF_8));
            try {
                SendResult r = p.send(m);
                if (r.getSendStatus() == SendStatus.SEND_OK) {
                    ok++;
                    perBroker.merge(r.getMessageQueue().getBrokerName(), 1, Integer::sum);
                } else {
                    failed++;
                    lastError = String.valueOf(r.getSendStatus());
                }
            } catch (Exception e) {
                failed++;
                lastError = e.toString().replace('\n', ' ');
            }
        }
        long ms = System.currentTimeMillis() - t0;
        p.shutdown();
        System.out.println("RESULT ok=" + ok + " failed=" + failed + " ms=" + ms + " brokers=" + perBroker
            + (lastError.isEmpty() ? "" : " lastError=" + lastError));
        return failed == 0 ? 0 : 1;
    }

    private static int consume(Map<String, String> opt) throws Exception {
        String topic = need(opt, "topic");
        String group = need(opt, "group");
        int count = Integer.parseInt(need(opt, "count"));
        String prefix = need(opt, "prefix");
        long timeoutMs = 1000L * Integer.parseInt(opt.getOrDefault("timeoutSec", "60"));
        Set<String> expected = null;
        if (opt.containsKey("keysFile")) {
            expected = new HashSet<>(Files.readAllLines(Paths.get(opt.get("keysFile")), StandardCharsets.UTF_8));
            expected.remove("");
        }
        Set<String> seen = ConcurrentHashMap.newKeySet();
        Map<String, Integer> perBroker = new ConcurrentHashMap<>();
        AtomicLong total = new AtomicLong();
        MessageListenerConcurrently listener = (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                total.incrementAndGet();
                if (body.startsWith(prefix + "-") && seen.add(body)) {
                    perBroker.merge(m.getBrokerName() == null ? "?" : m.getBrokerName(), 1, Integer::sum);
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };
        long t0 = System.currentTimeMillis();
        DefaultMQPushConsumer c = null;
        // A new Java client picks one of several nameservers at random; when that one is down its
        // first route lookup fails ("connect to null") and the push consumer's start() throws.
        // An application restarts it: so do we, with a fresh client (up to 5 picks).
        for (int attempt = 1; c == null; attempt++) {
            DefaultMQPushConsumer candidate = new DefaultMQPushConsumer(group);
            candidate.setNamesrvAddr(need(opt, "ns"));
            candidate.setInstanceName(group + "-" + ProcessHandle.current().pid() + "-" + attempt);
            candidate.setVipChannelEnabled(false);
            candidate.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            candidate.subscribe(topic, "*");
            candidate.registerMessageListener(listener);
            try {
                candidate.start();
                c = candidate;
            } catch (IllegalStateException e) {
                candidate.shutdown();
                if (attempt >= 5) {
                    throw e;
                }
                System.out.println("NOTE consumer start failed (" + e.getMessage() + "); restarting it");
            }
        }
        if (expected != null) {
            while (!seen.containsAll(expected) && System.currentTimeMillis() - t0 < timeoutMs) {
                Thread.sleep(100);
            }
        } else {
            while (seen.size() < count && System.currentTimeMillis() - t0 < timeoutMs) {
                Thread.sleep(100);
            }
        }
        long ms = System.currentTimeMillis() - t0;
        c.shutdown();
        String missing = "";
        boolean ok = seen.size() >= count;
        if (expected != null) {
            Set<String> lost = new TreeSet<>(expected);
            lost.removeAll(seen);
            ok = lost.isEmpty();
            missing = " expected=" + expected.size() + " missing=" + lost.size()
                + (lost.isEmpty() ? "" : " firstMissing=" + String.join(",", new ArrayList<>(lost).subList(0, Math.min(5, lost.size()))));
        }
        System.out.println("RESULT distinct=" + seen.size() + " total=" + total.get() + " ms=" + ms
            + " brokers=" + new TreeMap<>(perBroker) + missing);
        return ok ? 0 : 1;
    }

    private static int produceLoop(Map<String, String> opt) throws Exception {
        String topic = need(opt, "topic");
        long duration = Long.parseLong(need(opt, "durationMs"));
        long interval = Long.parseLong(opt.getOrDefault("intervalMs", "20"));
        String prefix = opt.getOrDefault("prefix", "loop");
        File stop = opt.containsKey("stopFile") ? new File(opt.get("stopFile")) : null;
        DefaultMQProducer p = newProducer(opt, "interop_loop_producer");
        long t0 = System.currentTimeMillis();
        int i = 0;
        while (System.currentTimeMillis() - t0 < duration && (stop == null || !stop.exists())) {
            String body = prefix + "-" + i;
            Message m = new Message(topic, "TagL", "L-" + i, body.getBytes(StandardCharsets.UTF_8));
            long s = System.currentTimeMillis();
            String line;
            try {
                SendResult r = p.send(m);
                // The body too: the controller-mode scenarios match acknowledged sends to
                // consumed messages.
                line = sendLine(s, r) + " " + body
                    + (r.getSendStatus() == SendStatus.SEND_OK ? "" : " " + r.getSendStatus());
            } catch (Exception e) {
                line = "SEND " + s + " " + (System.currentTimeMillis() - s) + " FAIL "
                    + e.getClass().getSimpleName();
            }
            printAndPace(line, s, interval);
            i++;
        }
        p.shutdown();
        System.out.println("RESULT sends=" + i);
        return 0;
    }

    // "SEND <start ms> <latency ms> OK|FAIL <broker>" of a send that returned a result.
    private static String sendLine(long start, SendResult r) {
        return "SEND " + start + " " + (System.currentTimeMillis() - start) + " "
            + (r.getSendStatus() == SendStatus.SEND_OK ? "OK " : "FAIL ")
            + r.getMessageQueue().getBrokerName();
    }

    // Prints a SEND line at once, then sleeps out the rest of the interval that began at start.
    private static void printAndPace(String line, long start, long interval) throws InterruptedException {
        System.out.println(line);
        System.out.flush();
        long sleep = interval - (System.currentTimeMillis() - start);
        if (sleep > 0) {
            Thread.sleep(sleep);
        }
    }

    private static int produceFresh(Map<String, String> opt) throws Exception {
        String topic = need(opt, "topic");
        long duration = Long.parseLong(need(opt, "durationMs"));
        long interval = Long.parseLong(opt.getOrDefault("intervalMs", "500"));
        long t0 = System.currentTimeMillis();
        int i = 0;
        while (System.currentTimeMillis() - t0 < duration) {
            long s = System.currentTimeMillis();
            String line;
            DefaultMQProducer p = null;
            try {
                // A group and instance of its own: a new MQClientInstance with an empty route cache.
                p = newProducer(opt, "interop_fresh_" + i);
                Message m = new Message(topic, "TagF", "F-" + i, ("fresh-" + i).getBytes(StandardCharsets.UTF_8));
                line = sendLine(s, p.send(m));
            } catch (Exception e) {
                String msg = String.valueOf(e.getMessage()).split("\n")[0].replace(' ', '_');
                line = "SEND " + s + " " + (System.currentTimeMillis() - s) + " FAIL "
                    + e.getClass().getSimpleName() + " " + (msg.length() > 80 ? msg.substring(0, 80) : msg);
            } finally {
                if (p != null) {
                    p.shutdown();
                }
            }
            printAndPace(line, s, interval);
            i++;
        }
        System.out.println("RESULT sends=" + i);
        return 0;
    }

    // Nameserver requests only (no broker is contacted), so the client's transport settings
    // (e.g. -Dtls.enable=true) apply to nameserver connections alone. Each step prints one line;
    // the first failure stops the run: "RESULT ok=false step=<step> error=<exception>".
    private static int nsQuery(Map<String, String> opt) throws Exception {
        DefaultMQProducer p = newProducer(opt, "interop_nsquery");
        var api = p.getDefaultMQProducerImpl().getmQClientFactory().getMQClientAPIImpl();
        String step = "clusterInfo";
        int rc = 0;
        try {
            // Types differ between 4.9 and 5.x packages; `var` keeps one source for both.
            var ci = api.getBrokerClusterInfo(5000);
            System.out.println("CLUSTER " + ci.toJson(false));
            String topic = opt.get("topic");
            if (topic != null) {
                step = "route";
                var rt = api.getTopicRouteInfoFromNameServer(topic, 5000);
                System.out.println("ROUTE " + rt.toJson(false));
            }
            String key = opt.get("kvKey");
            if (key != null) {
                String ns = need(opt, "kvNamespace");
                step = "kvPut";
                api.putKVConfigValue(ns, key, need(opt, "kvValue"), 5000);
                step = "kvGet";
                System.out.println("KV " + api.getKVConfigValue(ns, key, 5000));
            }
            System.out.println("RESULT ok=true");
        } catch (Exception e) {
            System.out.println("RESULT ok=false step=" + step + " error=" + e.toString().replace('\n', ' '));
            rc = 1;
        }
        p.shutdown();
        return rc;
    }
}
