import java.io.*;
import java.util.*;

public class Main {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            List<String> words = new ArrayList<>(Arrays.asList(line.trim().split("\\s+")));
            Collections.reverse(words);
            out.append(String.join(" ", words)).append('\n');
        }
        System.out.print(out);
    }
}
