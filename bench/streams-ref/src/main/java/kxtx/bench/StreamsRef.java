package kxtx.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The Kafka Streams side of bench/bench_vs_streams.py: read JSON values, add
 * {@code seen = len(pad)}, write them to another topic, exactly-once (EOS v2).
 *
 * <p>Options are {@code --name value}; see {@link #DEFAULTS}. With {@code --max-records N} the app
 * closes itself (a clean close commits the open transactions) once its processors have seen N
 * records; without it, it runs until SIGTERM. One JSON line goes to stdout at the end.
 */
public final class StreamsRef {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** Defaults of the options; bench/README.md says why each throughput setting is what it is. */
  private static final Map<String, String> DEFAULTS =
      Map.of(
          "threads", "2",
          "commit-ms", "100",
          "linger-ms", "100",
          "batch-bytes", "262144",
          "max-poll-records", "5000",
          "retry-backoff-ms", "10",
          "max-records", "0");

  private StreamsRef() {}

  static byte[] enrich(byte[] value) {
    try {
      ObjectNode doc = (ObjectNode) MAPPER.readTree(value);
      String pad = doc.get("pad").asText();
      // Python's len() counts code points, not UTF-16 units
      doc.put("seen", pad.codePointCount(0, pad.length()));
      return MAPPER.writeValueAsBytes(doc);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static void main(String[] argv) throws InterruptedException {
    Map<String, String> opt = new HashMap<>(DEFAULTS);
    for (int i = 0; i + 1 < argv.length; i += 2) {
      opt.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
    }
    long maxRecords = Long.parseLong(opt.get("max-records"));

    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, opt.get("app-id"));
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, opt.get("bootstrap"));
    p.put(StreamsConfig.STATE_DIR_CONFIG, opt.get("state-dir"));
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, opt.get("threads"));
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, opt.get("commit-ms"));
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_RECORDS_CONFIG), opt.get("max-poll-records"));
    p.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), opt.get("linger-ms"));
    p.put(StreamsConfig.producerPrefix(ProducerConfig.BATCH_SIZE_CONFIG), opt.get("batch-bytes"));
    // the first produce of a transaction can meet CONCURRENT_TRANSACTIONS while the last commit's
    // markers are written; retrying after 10 ms instead of 100 (kxtx's producers do the same)
    p.put(StreamsConfig.producerPrefix(ProducerConfig.RETRY_BACKOFF_MS_CONFIG), opt.get("retry-backoff-ms"));

    AtomicLong seen = new AtomicLong();
    CountDownLatch done = new CountDownLatch(1);
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(opt.get("in"), Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
        .mapValues(
            v -> {
              byte[] out = enrich(v);
              if (seen.incrementAndGet() == maxRecords) {
                done.countDown();
              }
              return out;
            })
        .to(opt.get("out"), Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));

    KafkaStreams streams = new KafkaStreams(builder.build(), p);
    streams.setUncaughtExceptionHandler(
        e -> {
          e.printStackTrace();
          done.countDown();
          return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
              .SHUTDOWN_CLIENT;
        });
    Runtime.getRuntime().addShutdownHook(new Thread(done::countDown));
    long t0 = System.nanoTime();
    streams.start();
    done.await();
    long t1 = System.nanoTime();
    // close() from a thread other than the stream threads: it commits what they processed
    boolean closed = streams.close(Duration.ofSeconds(60));
    long t2 = System.nanoTime();
    System.out.printf(
        "{\"processed\": %d, \"run_s\": %.3f, \"close_s\": %.3f, \"closed\": %b, \"state\": \"%s\"}%n",
        seen.get(), (t1 - t0) / 1e9, (t2 - t1) / 1e9, closed, streams.state());
  }
}
