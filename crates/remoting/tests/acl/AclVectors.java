// Writes signature test vectors for crates/remoting/src/signature.rs with Apache RocketMQ's own
// classes: the client side (AclClientRPCHook signing a RemotingCommand) and the server side
// (ACL 2.0 DefaultAuthenticationContextBuilder building the signed content, AclSigner signing
// it). Run by ./generate; the output (vectors.json) is checked in and read by tests/signature.rs.

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.AclSigner;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.auth.authentication.builder.DefaultAuthenticationContextBuilder;
import org.apache.rocketmq.auth.authentication.context.DefaultAuthenticationContext;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

public class AclVectors {
    // Characters chosen to exercise Java's key order (UTF-16 code units, where a surrogate pair
    // sorts below U+E000..U+FFFF unlike in UTF-8 byte order), multi-byte UTF-8 and JSON escapes.
    static final String[] ALPHABET = {
        "a", "b", "z", "A", "Z", "0", "9", "_", "-", ".", ":", ";", " ", "=", "\"", "\\", "/",
        "\u00e9", "\u00df", "\u4e2d", "\u6587", "\ue000", "\uffee", "\ud83d\ude00", "\ud801\udc37",
        "\n", "\t"
    };
    static final String[] COMMON_KEYS = {
        "topic", "brokerName", "brokerAddr", "clusterName", "namespace", "key", "value",
        "haServerAddr", "brokerId", "compressed", "bodyCrc32", "enableActingMaster",
        "heartbeatTimeoutMillis", "electionPriority", "_UNIQUE_KEY_QUERY", "__ZONE_NAME",
        "__ZONE_MODE", "acceptStandardJsonOnly", "AccessKey", "SecurityToken", "Signature"
    };
    static final int[] VERSIONS = {0, 317, 398, 399, 400, 401, 479, 493, 500};

    static String randomString(Random r, int max) {
        int n = r.nextInt(max + 1);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append(ALPHABET[r.nextInt(ALPHABET.length)]);
        }
        return sb.toString();
    }

    static String json(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20 || c > 0x7e) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        return sb.append('"').toString();
    }

    static String b64(byte[] b) {
        return b == null ? "null" : json(Base64.getEncoder().encodeToString(b));
    }

    public static void main(String[] args) throws Exception {
        int count = Integer.parseInt(args[0]); // args: count seed output-file
        Random r = new Random(Long.parseLong(args[1]));
        ChannelHandlerContext ctx = new EmbeddedChannel(new ChannelInboundHandlerAdapter()).pipeline().firstContext();
        DefaultAuthenticationContextBuilder builder = new DefaultAuthenticationContextBuilder();
        StringBuilder out = new StringBuilder("[\n");
        for (int i = 0; i < count; i++) {
            // The fields a request carries before signing, in the order they are added.
            List<String[]> fields = new ArrayList<>();
            int n = i == 0 ? 0 : r.nextInt(8);
            for (int f = 0; f < n; f++) {
                String key = r.nextInt(3) == 0 ? randomString(r, 6) : COMMON_KEYS[r.nextInt(COMMON_KEYS.length - 3)];
                if (key.isEmpty()) {
                    key = "k";
                }
                fields.add(new String[] {key, randomString(r, 12)});
            }
            if (i % 7 == 3) {
                fields.add(new String[] {"_UNIQUE_KEY_QUERY", r.nextBoolean() ? "true" : "false"});
            }
            if (i % 11 == 5) {
                // Keys that sort differently by UTF-16 code unit than by code point.
                fields.add(new String[] {"\ue000", "private use"});
                fields.add(new String[] {"\ud83d\ude00", "astral"});
            }
            byte[] body = null;
            int bodyKind = r.nextInt(4);
            if (bodyKind == 1) {
                body = new byte[0];
            } else if (bodyKind >= 2) {
                body = new byte[r.nextInt(300) + 1];
                r.nextBytes(body);
            }
            String accessKey = i == 1 ? "" : "ak-" + randomString(r, 8);
            String secretKey = "sk-" + randomString(r, 16);
            String token = r.nextInt(4) == 0 ? "token-" + randomString(r, 6) : null;
            int version = VERSIONS[r.nextInt(VERSIONS.length)];

            RemotingCommand request = RemotingCommand.createRequestCommand(100 + r.nextInt(900), null);
            request.setVersion(version);
            if (!fields.isEmpty() || r.nextBoolean()) {
                request.setExtFields(new HashMap<>());
            }
            for (String[] kv : fields) {
                request.addExtField(kv[0], kv[1]);
            }
            request.setBody(body);
            Map<String, String> before = request.getExtFields() == null ? new HashMap<>() : new HashMap<>(request.getExtFields());

            SessionCredentials credentials = token == null
                ? new SessionCredentials(accessKey, secretKey)
                : new SessionCredentials(accessKey, secretKey, token);
            new AclClientRPCHook(credentials).doBeforeRequest("127.0.0.1:9876", request);
            String clientSignature = request.getExtFields().get(SessionCredentials.SIGNATURE);

            DefaultAuthenticationContext server = builder.build(ctx, request);
            String serverSignature = AclSigner.calSignature(server.getContent(), secretKey);

            out.append("  {\"version\": ").append(version);
            out.append(", \"secretKey\": ").append(json(secretKey));
            out.append(", \"accessKey\": ").append(json(accessKey));
            out.append(", \"securityToken\": ").append(token == null ? "null" : json(token));
            out.append(", \"fieldsBefore\": [");
            boolean first = true;
            for (Map.Entry<String, String> e : before.entrySet()) {
                out.append(first ? "" : ", ").append("[").append(json(e.getKey())).append(", ").append(json(e.getValue())).append("]");
                first = false;
            }
            out.append("], \"extFields\": [");
            first = true;
            for (Map.Entry<String, String> e : request.getExtFields().entrySet()) {
                out.append(first ? "" : ", ").append("[").append(json(e.getKey())).append(", ").append(json(e.getValue())).append("]");
                first = false;
            }
            out.append("], \"body\": ").append(b64(body));
            out.append(", \"clientSignature\": ").append(json(clientSignature));
            out.append(", \"serverContent\": ").append(b64(server.getContent()));
            out.append(", \"serverSignature\": ").append(json(serverSignature));
            out.append(", \"accepted\": ").append(serverSignature.equals(clientSignature));
            out.append("}").append(i + 1 < count ? ",\n" : "\n");
        }
        out.append("]\n");
        java.nio.file.Files.write(java.nio.file.Paths.get(args[2]), out.toString().getBytes(StandardCharsets.UTF_8));
    }
}
