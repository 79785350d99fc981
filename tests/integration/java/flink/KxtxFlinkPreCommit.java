// A Flink 2.2 job, in a MiniCluster of its own (one JVM, no Flink cluster), whose KafkaSink
// (EXACTLY_ONCE, a transactional id prefix) pre-commits the transactions of its first checkpoint and
// never commits them: tests/integration/test_complete_flink.py SIGKILLs the JVM at that point, as a
// job stopped between pre-commit and commit.
//
// The stop point is exact, not timed. Source, StopAfterPreCommit and the sink's writer and committer
// run chained in one task per subtask (one thread each). No periodic checkpoint comes for a day; main
// triggers checkpoint 1 once every subtask passed its PER_SUBTASK records to the writer. At a
// checkpoint a task first calls every chained operator's prepareSnapshotPreBarrier, where the sink's
// writer flushes its producer (every record acknowledged by the brokers) and hands its committable
// (transactional id PREFIX-SUBTASK-1, producer id, epoch) to the committer: Flink's pre-commit. Only
// then does it call the operators' snapshotState. StopAfterPreCommit's snapshotState of checkpoint 1
// writes the values it passed to the writer to SIGNALS/precommitted-SUBTASK and blocks: the subtask
// never acknowledges the checkpoint, so it never completes and no committer is told to commit
// (notifyCheckpointComplete). The test kills the JVM once every subtask's file is there.
//
// args: BOOTSTRAP TOPIC PREFIX SIGNALS PARALLELISM. Subtask s writes to partitions 2s and 2s+1
// of TOPIC (2 * PARALLELISM partitions), so each transaction has partitions of its own.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.kafka.sink.KafkaPartitioner;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

public final class KxtxFlinkPreCommit {
    /** Records each subtask's source emits before it waits for a checkpoint to complete. */
    static final int PER_SUBTASK = 5;

    static final long DAY_MS = 86_400_000L;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String prefix = args[2];
        String signals = args[3];
        int parallelism = Integer.parseInt(args[4]);

        Configuration conf = new Configuration();
        conf.set(RestOptions.BIND_PORT, "0"); // tests run beside each other: no fixed port
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(parallelism);
        // Checkpointing on (the sink's EXACTLY_ONCE needs it), but no periodic checkpoint for a day
        // (the first comes after a random delay between the minimum pause and the interval): the
        // one checkpoint is triggered below, once every subtask passed all its records to the sink.
        env.enableCheckpointing(DAY_MS);
        env.getCheckpointConfig().setMinPauseBetweenCheckpoints(DAY_MS);

        // PER_SUBTASK records per subtask, then nothing until a checkpoint completes (none will).
        DataGeneratorSource<String> source = new DataGeneratorSource<>(
                index -> "flink-" + index,
                Long.MAX_VALUE,
                RateLimiterStrategy.perCheckpoint(PER_SUBTASK * parallelism),
                Types.STRING);
        KafkaSink<String> sink = KafkaSink.<String>builder()
                .setBootstrapServers(bootstrap)
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix(prefix)
                // below the broker's transaction.max.timeout.ms (15 min by default)
                .setProperty("transaction.timeout.ms", "600000")
                .setRecordSerializer(KafkaRecordSerializationSchema.<String>builder()
                        .setTopic(topic)
                        .setValueSerializationSchema(new SimpleStringSchema())
                        .setPartitioner(new OwnPartitions())
                        .build())
                .build();
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "records")
                .map(new StopAfterPreCommit(signals))
                .sinkTo(sink);

        MiniClusterConfiguration cluster = new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(parallelism)
                .build();
        MiniCluster mini = new MiniCluster(cluster);
        mini.start();
        JobID job = mini.submitJob(env.getStreamGraph()).get().getJobID();
        long deadline = System.nanoTime() + 120_000_000_000L;
        for (int s = 0; s < parallelism; s++) {
            while (!Files.exists(Path.of(signals, "emitted-" + s))) {
                if (System.nanoTime() > deadline) {
                    System.err.println("KxtxFlinkPreCommit: subtask " + s + " did not emit its records in 120 s: "
                            + mini.getJobStatus(job).get());
                    System.exit(1);
                }
                Thread.sleep(20);
            }
        }
        mini.triggerCheckpoint(job); // never completes: StopAfterPreCommit blocks its snapshot
        Thread.sleep(Long.MAX_VALUE); // until SIGKILL
    }

    /** Subtask s writes to partitions 2s and 2s+1, alternately. */
    static final class OwnPartitions implements KafkaPartitioner<String> {
        private int subtask;
        private long count;

        @Override
        public void open(int parallelInstanceId, int parallelInstances) {
            subtask = parallelInstanceId;
        }

        @Override
        public int partition(String record, byte[] key, byte[] value, String targetTopic, int[] partitions) {
            return partitions[2 * subtask + (int) (count++ % 2)];
        }
    }

    /** Passes records through; at checkpoint 1, after the sink's pre-commit, says which and blocks. */
    static final class StopAfterPreCommit extends RichMapFunction<String, String> implements CheckpointedFunction {
        private final String signals;
        private final List<String> seen = new ArrayList<>();

        StopAfterPreCommit(String signals) {
            this.signals = signals;
        }

        @Override
        public void open(OpenContext context) {}

        @Override
        public String map(String value) throws Exception {
            seen.add(value);
            if (seen.size() == PER_SUBTASK) { // returned, this one goes to the sink's writer at once
                int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
                Files.createFile(Path.of(signals, "emitted-" + subtask));
            }
            return value;
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {}

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            if (context.getCheckpointId() != 1) {
                return;
            }
            int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            Path done = Path.of(signals, "precommitted-" + subtask);
            Path partial = Path.of(signals, "precommitted-" + subtask + ".partial");
            Files.write(partial, seen, StandardCharsets.UTF_8);
            Files.move(partial, done, StandardCopyOption.ATOMIC_MOVE);
            while (true) { // until SIGKILL: checkpoint 1 is never acknowledged
                try {
                    Thread.sleep(60_000);
                } catch (InterruptedException e) {
                    // Flink's cancellation interrupts the task thread: keep blocking
                }
            }
        }
    }
}
