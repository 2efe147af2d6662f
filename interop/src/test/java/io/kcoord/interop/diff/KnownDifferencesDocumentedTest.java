package io.kcoord.interop.diff;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

/** Every difference the suite accepts is explained in the README, under the item it names. */
class KnownDifferencesDocumentedTest {
    @Test
    void every_known_difference_names_an_item_of_the_readmes_differences() throws Exception {
        Path readme = Paths.get(System.getProperty("kcoord.readme", "../README.md"));
        String text = Files.readString(readme);
        int start = text.indexOf("## Differences from Apache Kafka 4.4");
        assertTrue(start >= 0, "the README has a differences section");
        int end = text.indexOf("\n## ", start + 1);
        String section = text.substring(start, end < 0 ? text.length() : end);
        for (KnownDifferences.Entry e : KnownDifferences.ALL) {
            assertTrue(section.contains("- **" + e.readmeItem() + "**"),
                    "README differences lack the item '" + e.readmeItem() + "' for " + e.scenario()
                            + " / " + e.step());
        }
    }
}
