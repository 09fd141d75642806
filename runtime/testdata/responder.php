<?php
// A responder written with php-amqplib from the documented wire contract
// alone: read requests from a responder's queue, answer each on its
// reply_to with the same correlation_id and a body of
// {"id", "occurred_at", "payload"} or {"id", "occurred_at", "error"},
// then ack. It doubles "n"; a request for sku "refuse" gets a permanent
// error. It exits after WARREN_ANSWER requests.
require_once '/usr/share/php/PhpAmqpLib/autoload.php';

use PhpAmqpLib\Connection\AMQPStreamConnection;
use PhpAmqpLib\Message\AMQPMessage;

$conn = new AMQPStreamConnection(
    getenv('WARREN_HOST'), (int) getenv('WARREN_PORT'),
    getenv('WARREN_USER'), getenv('WARREN_PASSWORD'), getenv('WARREN_VHOST')
);
$ch = $conn->channel();
$ch->basic_qos(null, 1, null);
$left = (int) getenv('WARREN_ANSWER');

$answer = function (AMQPMessage $req) use ($ch, &$left) {
    $env = json_decode($req->getBody(), true);
    $reply = ['id' => $env['id'], 'occurred_at' => gmdate('Y-m-d\TH:i:s\Z')];
    if ($env['payload']['sku'] === 'refuse') {
        $reply['error'] = ['message' => 'php refuses ' . $env['payload']['sku'], 'permanent' => true];
    } else {
        $reply['payload'] = ['n' => $env['payload']['n'] * 2, 'by' => 'php'];
    }
    $ch->basic_publish(new AMQPMessage(json_encode($reply), [
        'content_type' => 'application/json',
        'correlation_id' => $req->get('correlation_id'),
        'message_id' => $env['id'],
    ]), '', $req->get('reply_to'));
    $req->ack();
    $left--;
};

$ch->basic_consume(getenv('WARREN_QUEUE'), '', false, false, false, false, $answer);
fwrite(STDOUT, "ready\n");
while ($left > 0) {
    $ch->wait();
}
$ch->close();
$conn->close();
