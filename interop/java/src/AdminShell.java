// Hosts Apache RocketMQ's own mqadmin (org.apache.rocketmq.tools.command.MQAdminStartup.main0)
// in one long-lived JVM, so that the interop suite does not pay a JVM start per admin command.
//
// Protocol: each stdin line is one mqadmin command, its arguments separated by TAB characters.
// For each command the shell writes the command's captured stdout+stderr, then a line
// "@@END@@ <status>" (status: ok | exit:<n> | error:<exception>).
//
// The command runs on its own thread and is complete when that thread ends. While the command is
// inside DefaultMQAdminExt.shutdown() the shell interrupts the admin client's NettyEventExecutor
// thread, which otherwise idles up to 3 s in a queue poll before shutdown can join it.

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.Permission;

import org.apache.rocketmq.tools.command.MQAdminStartup;

public class AdminShell {
    private static final InheritableThreadLocal<ByteArrayOutputStream> BUF = new InheritableThreadLocal<>();

    static final class ExitTrap extends SecurityException {
        final int status;

        ExitTrap(int status) {
            super("System.exit(" + status + ") trapped");
            this.status = status;
        }
    }

    public static void main(String[] argv) throws Exception {
        PrintStream realOut = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        PrintStream realErr = new PrintStream(new FileOutputStream(FileDescriptor.err), true, "UTF-8");
        OutputStream route = new OutputStream() {
            @Override
            public void write(int b) {
                ByteArrayOutputStream x = BUF.get();
                if (x != null) {
                    synchronized (x) {
                        x.write(b);
                    }
                } else {
                    realErr.write(b);
                }
            }

            @Override
            public void write(byte[] b, int off, int len) {
                ByteArrayOutputStream x = BUF.get();
                if (x != null) {
                    synchronized (x) {
                        x.write(b, off, len);
                    }
                } else {
                    realErr.write(b, off, len);
                }
            }
        };
        PrintStream router = new PrintStream(route, true, "UTF-8");
        System.setOut(router);
        System.setErr(router);
        try {
            // Trap System.exit() of a command (e.g. a command-line parse error); Java 17 allows this
            // with -Djava.security.manager=allow. Without it an exit ends the shell and the suite
            // restarts it.
            System.setSecurityManager(new SecurityManager() {
                @Override
                public void checkExit(int status) {
                    if (BUF.get() != null) {
                        throw new ExitTrap(status);
                    }
                }

                @Override
                public void checkPermission(Permission perm) {
                }

                @Override
                public void checkPermission(Permission perm, Object context) {
                }
            });
        } catch (Throwable e) {
            realErr.println("AdminShell: cannot trap System.exit: " + e);
        }
        realOut.println("@@READY@@");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            final String[] args = line.split("\t");
            final ByteArrayOutputStream buf = new ByteArrayOutputStream();
            final String[] status = {"ok"};
            Thread t = new Thread(() -> {
                BUF.set(buf);
                try {
                    MQAdminStartup.main0(args, null);
                } catch (ExitTrap e) {
                    status[0] = "exit:" + e.status;
                } catch (Throwable e) {
                    e.printStackTrace();
                    status[0] = "error:" + e.getClass().getSimpleName();
                }
            }, "mqadmin-" + args[0]);
            t.setDaemon(true);
            t.start();
            while (t.isAlive()) {
                if (inShutdown(t)) {
                    wakeEventExecutors();
                }
                t.join(10);
            }
            String out;
            synchronized (buf) {
                out = buf.toString("UTF-8");
            }
            realOut.print(out);
            if (!out.endsWith("\n")) {
                realOut.println();
            }
            realOut.println("@@END@@ " + status[0]);
            realOut.flush();
        }
        realOut.flush();
        Runtime.getRuntime().halt(0);
    }

    /** The admin client's NettyEventExecutor polls its queue every 3 s; wake it so shutdown returns at once. */
    private static void wakeEventExecutors() {
        for (Thread x : Thread.getAllStackTraces().keySet()) {
            if (x.getName().startsWith("NettyEventExecutor")) {
                x.interrupt();
            }
        }
    }

    private static boolean inShutdown(Thread t) {
        for (StackTraceElement e : t.getStackTrace()) {
            if ("shutdown".equals(e.getMethodName())
                && e.getClassName().startsWith("org.apache.rocketmq.tools.admin.DefaultMQAdminExt")) {
                return true;
            }
        }
        return false;
    }
}
