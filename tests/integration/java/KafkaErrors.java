// Prints every error of Kafka's protocol (org.apache.kafka.common.protocol.Errors) as
// code, name, retriable (its exception is a RetriableException), stale metadata (an
// InvalidMetadataException): what tests/integration/test_kafka_errors.py compares kxtx.client.kafkaerrors with.
import org.apache.kafka.common.errors.InvalidMetadataException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.Errors;

public class KafkaErrors {
    public static void main(String[] args) {
        for (Errors e : Errors.values()) {
            Exception x = e.exception();
            System.out.println(e.code() + "\t" + e.name() + "\t" + (x instanceof RetriableException) + "\t"
                + (x instanceof InvalidMetadataException));
        }
    }
}
